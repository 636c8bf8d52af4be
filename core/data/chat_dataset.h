#pragma once
// Chat / instruction datasets for LLM fine-tuning (SPECS.md "Llama-family decoder", chat data):
// - alpaca rows `{instruction, input?, output, system?, history?: [[question, answer], ...]}`
// - sharegpt rows `{conversations: [{from: human|user|gpt|assistant|system, value}], system?}`,
//   also the OpenAI-style `{messages: [{role, content}]}`.
// Files are a JSON array of rows or JSON Lines (one row per line; blank lines skipped). Every
// problem is reported with "file:line" (JSONL) or "file: row N" (JSON array) and what to fix;
// bad rows never crash the parser. No LibTorch here.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/data/dataset_problem.h"

namespace crucible::data {

enum class ChatRole { System, User, Assistant };
const char* chat_role_name(ChatRole role);  // "system", "user", "assistant"

struct ChatMessage {
    ChatRole role = ChatRole::User;
    std::string content;
};

// The alpaca fields of a row, kept so the alpaca template can reproduce the original prompt.
struct AlpacaFields {
    std::string instruction, input;
};

struct ChatSample {
    // Optional system message first, then user/assistant turns alternating, ending with an
    // assistant turn.
    std::vector<ChatMessage> messages;
    std::optional<AlpacaFields> alpaca;  // set for single-turn alpaca rows
    std::string where;                   // "file:line" or "file: row N"
};

enum class ChatFormat { Auto, Alpaca, ShareGpt };
// "auto", "alpaca", "sharegpt"; throws InputError("format", ...) for others.
ChatFormat parse_chat_format(const std::string& name);

struct ChatLoadResult {
    std::vector<ChatSample> samples;       // the valid rows, in file order
    std::vector<DatasetProblem> problems;  // one per bad row (and file-level problems)
    ChatFormat format = ChatFormat::Auto;  // the format the rows were read as
    std::size_t rows = 0;                  // rows seen (valid or not)
    bool ok() const;                       // no problem with error = true
};

struct ChatLoadOptions {
    ChatFormat format = ChatFormat::Auto;
    std::uint64_t max_file_bytes = 4ull << 30;
    std::size_t max_problems = 1000;  // later problems are counted in one summary problem
};

// Parses the text of a file. `where` names it in problems.
ChatLoadResult parse_chat_dataset(std::string_view text, const std::string& where,
                                  const ChatLoadOptions& options = {});
// Reads and parses a file (path via path_to_utf8, so non-ASCII names work everywhere).
ChatLoadResult load_chat_dataset(const std::filesystem::path& path,
                                 const ChatLoadOptions& options = {});
// Throws InputError naming the first problems when the result has errors.
void throw_if_errors(const ChatLoadResult& result, const std::string& where);

}  // namespace crucible::data
