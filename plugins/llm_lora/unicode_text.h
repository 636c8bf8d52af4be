#pragma once
// Small Unicode helpers for the tokenizers: UTF-8 code points, a PCRE2 regex (UTF + Unicode
// properties, so `\p{L}` and `\s` follow Unicode as the tokenizers' own engine does), and
// normalization forms (ICU when the build has it).
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace crucible::llm {

// Byte length of the UTF-8 sequence that starts with `lead` (1 for invalid lead bytes).
std::size_t utf8_length(unsigned char lead);
// Appends the UTF-8 form of a code point.
void append_utf8(std::string& out, char32_t cp);
// Code points of valid UTF-8 text, as byte ranges.
std::vector<std::string_view> utf8_chars(std::string_view text);
// Replaces invalid sequences by U+FFFD.
std::string utf8_lossy(std::string_view bytes);

// The byte of a byte-fallback token "<0xAB>" (upper-case hex, as SentencePiece and Hugging Face
// write them), or -1 for any other text.
int parse_byte_piece(std::string_view text);

class Regex {
  public:
    // Throws InputError(where, ...) with PCRE2's message and offset for a bad pattern.
    // `literal` matches the pattern text as-is.
    Regex(const std::string& pattern, const std::string& where, bool literal = false);
    ~Regex();
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;
    // Non-overlapping matches [begin, end) of valid UTF-8 text, left to right (empty matches
    // are skipped).
    std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view text) const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// "NFC", "NFD", "NFKC", "NFKD"; Error when this build has no ICU.
std::string unicode_normalize(std::string_view text, const std::string& form);
std::string unicode_lowercase(std::string_view text);

}  // namespace crucible::llm
