#pragma once
// The key under which a case-insensitive file system (NTFS, and by default APFS and exFAT) files a
// name: every character replaced by its simple uppercase mapping, as NTFS's upcase table does.
// "IMG.jpg" and "img.jpg", "Été.png" and "éTÉ.png", "ΣΟΦΙΑ" and "σοφια" share a key and are one
// file there; "ß" and "ss", or "İ" and "i", do not. The mappings are Unicode 15.0's
// (case_fold.cpp); ill-formed UTF-8 is kept byte for byte.
#include <string>
#include <string_view>

namespace crucible {

// The simple uppercase mapping of one code point (the code point itself when it has none).
char32_t simple_uppercase(char32_t code_point);

// `name` with every character upper-cased by simple_uppercase: equal keys, one file on Windows.
std::string case_insensitive_key(std::string_view name);

}  // namespace crucible
