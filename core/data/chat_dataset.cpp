#include "core/data/chat_dataset.h"

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"

namespace crucible::data {
namespace {

using Json = nlohmann::json;

struct RowError {
    std::string what;
};

const Json* find(const Json& row, const char* name) {
    const auto it = row.find(name);
    return it == row.end() || it->is_null() ? nullptr : &*it;
}

std::string string_field(const Json& row, const char* name, bool required) {
    const Json* v = find(row, name);
    if (v == nullptr) {
        if (required) throw RowError{std::string("missing field '") + name + "'"};
        return {};
    }
    if (!v->is_string())
        throw RowError{std::string("field '") + name + "': expected a string, got " +
                       json_type_name(*v)};
    return v->get<std::string>();
}

// Roles must go (system) user assistant user assistant ...
void check_turns(const std::vector<ChatMessage>& messages) {
    std::size_t i = 0;
    if (!messages.empty() && messages[0].role == ChatRole::System) i = 1;
    if (i == messages.size()) throw RowError{"no user/assistant turns"};
    for (std::size_t k = i; k < messages.size(); ++k) {
        const ChatRole want = (k - i) % 2 == 0 ? ChatRole::User : ChatRole::Assistant;
        if (messages[k].role != want)
            throw RowError{"turn " + std::to_string(k + 1) + " is " +
                           chat_role_name(messages[k].role) + ", expected " + chat_role_name(want) +
                           " (turns alternate user/assistant after an optional system message)"};
    }
    if (messages.back().role != ChatRole::Assistant)
        throw RowError{"the last turn is from the user: there is no response to learn"};
}

ChatSample parse_alpaca(const Json& row) {
    ChatSample s;
    const std::string instruction = string_field(row, "instruction", true);
    const std::string input = string_field(row, "input", false);
    const std::string output = string_field(row, "output", true);
    const std::string system = string_field(row, "system", false);
    if (instruction.empty() && input.empty()) throw RowError{"field 'instruction' is empty"};
    if (!system.empty()) s.messages.push_back({ChatRole::System, system});
    if (const Json* h = find(row, "history")) {
        if (!h->is_array())
            throw RowError{"field 'history': expected a list of [question, answer]"};
        for (std::size_t i = 0; i < h->size(); ++i) {
            const Json& pair = (*h)[i];
            if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() ||
                !pair[1].is_string())
                throw RowError{"field 'history' item " + std::to_string(i + 1) +
                               ": expected [question, answer] strings"};
            s.messages.push_back({ChatRole::User, pair[0].get<std::string>()});
            s.messages.push_back({ChatRole::Assistant, pair[1].get<std::string>()});
        }
    }
    s.messages.push_back({ChatRole::User, input.empty()         ? instruction
                                          : instruction.empty() ? input
                                                                : instruction + "\n\n" + input});
    s.messages.push_back({ChatRole::Assistant, output});
    if (s.messages.size() == 2 + (system.empty() ? 0 : 1))
        s.alpaca = AlpacaFields{instruction, input};
    return s;
}

ChatRole role_of(const std::string& name, const char* field) {
    if (name == "human" || name == "user") return ChatRole::User;
    if (name == "gpt" || name == "assistant" || name == "chatgpt" || name == "model" ||
        name == "bard")
        return ChatRole::Assistant;
    if (name == "system") return ChatRole::System;
    throw RowError{std::string("field '") + field + "': unknown role '" + name +
                   "' (expected human/user, gpt/assistant or system)"};
}

ChatSample parse_sharegpt(const Json& row) {
    ChatSample s;
    const bool openai = find(row, "conversations") == nullptr;
    const char* list_name = openai ? "messages" : "conversations";
    const char* role_key = openai ? "role" : "from";
    const char* text_key = openai ? "content" : "value";
    const Json* list = find(row, list_name);
    if (list == nullptr || !list->is_array())
        throw RowError{std::string("field '") + list_name + "': expected a list of turns"};
    const std::string system = string_field(row, "system", false);
    if (!system.empty()) s.messages.push_back({ChatRole::System, system});
    for (std::size_t i = 0; i < list->size(); ++i) {
        const Json& turn = (*list)[i];
        const std::string at = std::string(list_name) + "[" + std::to_string(i) + "]";
        if (!turn.is_object()) throw RowError{at + ": expected an object"};
        try {
            const std::string role = string_field(turn, role_key, true);
            ChatMessage m{role_of(role, role_key), string_field(turn, text_key, true)};
            if (m.role == ChatRole::System && (i != 0 || !system.empty()))
                throw RowError{"a system turn may only come first"};
            s.messages.push_back(std::move(m));
        } catch (const RowError& e) {
            throw RowError{at + ": " + e.what};
        }
    }
    return s;
}

ChatFormat detect(const Json& row) {
    if (row.contains("conversations") || row.contains("messages")) return ChatFormat::ShareGpt;
    if (row.contains("instruction") || row.contains("output")) return ChatFormat::Alpaca;
    throw RowError{"neither alpaca (instruction/output) nor sharegpt (conversations) fields"};
}

class Parser {
  public:
    Parser(const std::string& where, const ChatLoadOptions& options)
        : where_(where), options_(options) {
        result_.format = options.format;
    }

    void row(const Json& value, const std::string& at) {
        ++result_.rows;
        try {
            if (!value.is_object())
                throw RowError{std::string("expected an object, got ") + json_type_name(value)};
            const ChatFormat f =
                result_.format == ChatFormat::Auto ? detect(value) : result_.format;
            if (result_.format == ChatFormat::Auto) result_.format = f;
            ChatSample s = f == ChatFormat::Alpaca ? parse_alpaca(value) : parse_sharegpt(value);
            check_turns(s.messages);
            for (const auto& m : s.messages)
                if (!is_valid_utf8(m.content)) throw RowError{"text is not valid UTF-8"};
            s.where = at;
            result_.samples.push_back(std::move(s));
        } catch (const RowError& e) {
            problem(at, e.what);
        }
    }

    void problem(const std::string& at, const std::string& what) {
        ++errors_;
        if (result_.problems.size() < options_.max_problems)
            result_.problems.push_back({at, what, true});
    }

    ChatLoadResult finish() {
        if (errors_ > result_.problems.size())
            result_.problems.push_back(
                {where_,
                 std::to_string(errors_ - result_.problems.size()) + " more problems not listed",
                 true});
        if (result_.rows == 0 && result_.problems.empty())
            result_.problems.push_back({where_, "no rows: the file is empty", true});
        return std::move(result_);
    }

  private:
    std::string where_;
    ChatLoadOptions options_;
    ChatLoadResult result_;
    std::size_t errors_ = 0;
};

}  // namespace

const char* chat_role_name(ChatRole role) {
    switch (role) {
        case ChatRole::System:
            return "system";
        case ChatRole::User:
            return "user";
        case ChatRole::Assistant:
            return "assistant";
    }
    return "?";
}

ChatFormat parse_chat_format(const std::string& name) {
    if (name == "auto") return ChatFormat::Auto;
    if (name == "alpaca") return ChatFormat::Alpaca;
    if (name == "sharegpt") return ChatFormat::ShareGpt;
    throw InputError("format", "unknown chat format '" + name + "' (auto, alpaca, sharegpt)");
}

bool ChatLoadResult::ok() const {
    for (const auto& p : problems)
        if (p.error) return false;
    return true;
}

ChatLoadResult parse_chat_dataset(std::string_view text, const std::string& where,
                                  const ChatLoadOptions& options) {
    Parser parser(where, options);
    // A UTF-8 byte order mark is allowed at the start (editors on Windows write one).
    if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
    std::size_t first = text.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && text[first] == '[') {
        Json rows;
        try {
            rows = Json::parse(text);
        } catch (const Json::parse_error& e) {
            // Line of the failing byte, so the user can find it.
            const std::size_t pos =
                std::min<std::size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
            std::size_t line = 1;
            for (std::size_t i = 0; i < pos; ++i)
                line += text[i] == '\n';
            parser.problem(where + ":" + std::to_string(line),
                           std::string("invalid JSON: ") + e.what());
            return parser.finish();
        }
        for (std::size_t i = 0; i < rows.size(); ++i)
            parser.row(rows[i], where + ": row " + std::to_string(i + 1));
        return parser.finish();
    }
    // JSON Lines.
    std::size_t line = 0, pos = 0;
    while (pos < text.size()) {
        ++line;
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        std::string_view l = text.substr(pos, end - pos);
        pos = end + 1;
        if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
        if (l.find_first_not_of(" \t") == std::string_view::npos) continue;
        const std::string at = where + ":" + std::to_string(line);
        if (!is_valid_utf8(l)) {
            parser.problem(at, "line is not valid UTF-8");
            continue;
        }
        Json value;
        try {
            value = Json::parse(l);
        } catch (const Json::exception& e) {
            parser.problem(at, std::string("invalid JSON: ") + e.what());
            continue;
        }
        parser.row(value, at);
    }
    return parser.finish();
}

ChatLoadResult load_chat_dataset(const std::filesystem::path& path,
                                 const ChatLoadOptions& options) {
    const std::string text = read_file_bytes_limited(path, options.max_file_bytes);
    return parse_chat_dataset(text, path_to_utf8(path), options);
}

void throw_if_errors(const ChatLoadResult& result, const std::string& where) {
    if (result.ok()) return;
    std::string message;
    int n = 0;
    for (const auto& p : result.problems) {
        if (!p.error) continue;
        if (n++ == 5) {
            message += "\n  ...";
            break;
        }
        message += "\n  " + p.where + ": " + p.what;
    }
    throw InputError(
        where, std::to_string(result.problems.size()) + " problem(s) in the chat data:" + message);
}

}  // namespace crucible::data
