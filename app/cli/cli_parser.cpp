// Runs CLI11 over a command's words and turns its outcomes into Crucible's: help on stdout, and
// every parse error an InputError whose `where` is the flag or positional at fault.
#include "app/cli/cli_parser.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <regex>

#include "core/base/error.h"

namespace crucible::cli {
namespace {

bool is_name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
}

// CLI11 errors carry no pointer to their option, but every message names it with get_name()
// ("--n: Value 300 not in range 1 to 256", "Could not convert: --n = x", "OUT is required").
// The longest name standing as a whole word wins, so "--max-objects" is not read as "--max".
const CLI::Option* option_named_in(const CLI::App& app, const std::string& message) {
    const CLI::Option* best = nullptr;
    std::size_t best_size = 0;
    for (const CLI::Option* op : app.get_options()) {
        const std::string name = op->get_name();
        if (name.empty() || name.size() <= best_size) continue;
        for (auto at = message.find(name); at != std::string::npos;
             at = message.find(name, at + 1)) {
            const std::size_t end = at + name.size();
            if ((at == 0 || !is_name_char(message[at - 1])) &&
                (end == message.size() || !is_name_char(message[end]))) {
                best = op;
                best_size = name.size();
                break;
            }
        }
    }
    return best;
}

// Whether `text` is a whole number of the option's kind; CLI11's range check runs before the
// conversion and reports "abc" as out of range, which would send the user looking at the bounds.
bool converts(const std::string& text, bool integer) {
    if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
    char* end = nullptr;
    if (integer)
        static_cast<void>(std::strtoll(text.c_str(), &end, 10));
    else
        static_cast<void>(std::strtod(text.c_str(), &end));
    return end == text.c_str() + text.size();
}

// CLI11's range message in the words the CLI used before ("must be between 1 and 256, got 300"),
// with double bounds printed without std::to_string's zeros ("0.000000 to 1.000000").
std::string tidy(const std::string& text) {
    static const std::regex range(R"(^Value (.*) not in range (\S+) to (\S+)$)");
    static const std::regex trailing_zeros(R"((\d\.\d*?)0+(?!\d))");
    static const std::regex bare_point(R"((\d)\.(?!\d))");
    std::string out = std::regex_replace(text, range, "must be between $2 and $3, got $1");
    return std::regex_replace(std::regex_replace(out, trailing_zeros, "$1"), bare_point, "$1");
}

// The words of our own messages, in the style the hand-written loops used before.
std::string what_went_wrong(const CLI::ParseError& e, const CLI::Option* op) {
    const std::string message = e.what();
    if (dynamic_cast<const CLI::ArgumentMismatch*>(&e)) return "needs a value";
    if (dynamic_cast<const CLI::RequiredError*>(&e)) return "is required (see --help)";
    if (op) {
        const std::string type = op->get_type_name();
        const std::string got = op->results().empty() ? "" : op->results().back();
        const bool integer = type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0;
        const bool number = integer || type.rfind("FLOAT", 0) == 0;
        if (number && (dynamic_cast<const CLI::ConversionError*>(&e) || !converts(got, integer)))
            return std::string(integer ? "expects an integer" : "expects a number") + ", got '" +
                   got + "'";
        const std::string prefix = op->get_name() + ": ";
        if (message.rfind(prefix, 0) == 0) return tidy(message.substr(prefix.size()));
    }
    return tidy(message);
}

}  // namespace

const CLI::Validator& non_negative() {
    static const CLI::Validator check(
        [](const std::string& text) {
            return text.rfind('-', 0) == 0 ? std::string("must not be negative") : std::string();
        },
        "");
    return check;
}

Parsed parse_words(CLI::App& app, const std::vector<std::string>& words,
                   std::vector<std::string>* extras) {
    // Words no option takes are sorted out below, where an unknown flag can be named.
    app.allow_extras();
    // CLI11 consumes a vector from its back: the first word goes last.
    std::vector<std::string> reversed(words.rbegin(), words.rend());
    try {
        app.parse(reversed);
    } catch (const CLI::CallForHelp&) {
        std::printf("%s", app.help().c_str());
        return Parsed::HelpPrinted;
    } catch (const CLI::CallForAllHelp&) {
        std::printf("%s", app.help("", CLI::AppFormatMode::All).c_str());
        return Parsed::HelpPrinted;
    } catch (const CLI::ParseError& e) {
        const CLI::Option* op = option_named_in(app, e.what());
        throw InputError(op ? op->get_name() : "arguments", what_went_wrong(e, op));
    }
    const std::vector<std::string> rest = app.remaining();
    for (const auto& word : rest)
        if (word.size() > 1 && word[0] == '-')
            throw InputError(word, "unknown option (see --help)");
    if (!rest.empty() && !extras) throw InputError(rest.front(), "unexpected argument");
    if (extras) extras->insert(extras->end(), rest.begin(), rest.end());
    return Parsed::Run;
}

}  // namespace crucible::cli
