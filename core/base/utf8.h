#pragma once
// UTF-8 in one strict and one lossy form, for every part of Crucible that reads text: paths,
// dataset files, pickles, tokenizers. Strict: is_valid_utf8 and decode_utf8_char accept only
// the well-formed sequences of the Unicode standard (Table 3-7: no overlongs, no surrogates,
// nothing above U+10FFFF). Lossy: each maximal subpart of an ill-formed sequence becomes one
// U+FFFD, the practice the Unicode standard recommends (chapter 3, "U+FFFD Substitution of
// Maximal Subparts") and the one Rust's String::from_utf8_lossy and so Hugging Face's tokenizers
// follow: a truncated 3-byte character is one U+FFFD, not one per byte. This file knows no
// Unicode properties (letters, digits, case): those are in core/data/text/unicode.h.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace crucible {

inline constexpr char32_t kReplacementCharacter = 0xFFFD;
inline constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";

// One character of a byte string. `length` is at least 1 and never runs past the end. For an
// ill-formed sequence `valid` is false, `code_point` is U+FFFD and `length` covers its maximal
// subpart (the lead byte and the continuation bytes that could still have been right).
struct Utf8Char {
    char32_t code_point = 0;
    std::size_t length = 1;
    bool valid = true;
};
// The character that starts at byte `pos` (< text.size()).
Utf8Char decode_utf8_char(std::string_view text, std::size_t pos);

// True when `text` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view text);

// Appends the UTF-8 form of a code point; a surrogate or anything above U+10FFFF appends U+FFFD.
void append_utf8(std::string& out, char32_t code_point);

// The characters of `text` as byte ranges (an ill-formed sequence: its maximal subpart).
std::vector<std::string_view> utf8_chars(std::string_view text);

// Lossy: `bytes` with each maximal subpart of an ill-formed sequence replaced by U+FFFD (valid
// text comes back unchanged).
std::string utf8_lossy(std::string_view bytes);
// Lossy, as code points.
std::u32string decode_utf8_lossy(std::string_view bytes);

}  // namespace crucible
