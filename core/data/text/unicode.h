#pragma once
// Unicode text for the tokenizers of every task (plugins/llm_lora's tokenizer.json and
// tokenizer.model readers, plugins/sd_lora's CLIP tokenizer): a regex engine whose `\p{L}`,
// `\p{N}`, `\s` and `\w` follow the Unicode tables (PCRE2 with UTF and UCP, as the reference
// tokenizers' own engines do), normalization forms and lower-casing (ICU when the build has it).
// It lives in core/data because both tokenizer plugins need it and a plugin may not use another
// plugin; it needs no LibTorch. It knows no tokenizer format: UTF-8 itself is in
// core/base/utf8.h, the byte-level map in byte_level.h, the merge loop in bpe.h.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace crucible::data::text {

class Regex {
  public:
    struct Options {
        bool literal = false;           // match the pattern text as it is
        bool case_insensitive = false;  // Unicode case folding (CLIP's re.IGNORECASE)
    };
    // Throws InputError(where, ...) with PCRE2's message and offset for a bad pattern.
    Regex(const std::string& pattern, const std::string& where, Options options);
    Regex(const std::string& pattern, const std::string& where)
        : Regex(pattern, where, Options{}) {}
    ~Regex();
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;
    // Non-overlapping matches [begin, end) of valid UTF-8 text, left to right (empty matches
    // are skipped). The caller checks the text (is_valid_utf8): PCRE2 is told not to.
    std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view text) const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// "NFC", "NFD", "NFKC", "NFKD" of valid UTF-8 text; Error when this build has no ICU and the
// text is not ASCII.
std::string unicode_normalize(std::string_view text, const std::string& form);
// Full Unicode lower case (ICU's root locale); ASCII only when this build has no ICU.
std::string unicode_lowercase(std::string_view text);

}  // namespace crucible::data::text
