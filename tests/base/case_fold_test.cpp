// The name key of case-insensitive file systems (core/base/case_fold.h). Its table is checked
// against ICU code point by code point in tests/data_text/case_fold_icu_test.cpp.
#include <gtest/gtest.h>

#include <string>

#include "core/base/case_fold.h"

using namespace crucible;

TEST(CaseFold, NamesNtfsFilesTogetherShareAKey) {
    const std::pair<std::string, std::string> same[] = {
        {"IMG_0001.JPG", "img_0001.jpg"},
        {"Été à Noël", "ÉTÉ À NOËL"},
        {"ÿ", "Ÿ"},                    // U+00FF's capital lies outside Latin-1
        {"Łódź", "ŁÓDŹ"},              // Latin Extended-A pairs
        {"Tiếng Việt", "TIẾNG VIỆT"},  // Latin Extended Additional
        {"σοφία", "ΣΟΦΊΑ"},
        {"ς", "Σ"},  // final sigma
        {"кошка ёж", "КОШКА ЁЖ"},
        {"բարեւ", "ԲԱՐԵՒ"},                                        // Armenian
        {"\xEF\xBD\x81\xEF\xBD\x82", "\xEF\xBC\xA1\xEF\xBC\xA2"},  // fullwidth ａｂ, ＡＢ
        {"\xF0\x90\x90\xA8", "\xF0\x90\x90\x80"},                  // Deseret, beyond the BMP
    };
    for (const auto& [a, b] : same)
        EXPECT_EQ(case_insensitive_key(a), case_insensitive_key(b)) << a << " / " << b;
}

TEST(CaseFold, NamesNtfsKeepApartKeepTheirOwnKeys) {
    const std::pair<std::string, std::string> apart[] = {
        {"straße", "strasse"},  // no one-letter capital of ß
        {"İ", "i"},             // Turkish dotted capital I is its own letter
        {"e", "é"},             // accents are not case
        {"猫", "貓"},
        {"a.jpg", "a.jpeg"},
    };
    for (const auto& [a, b] : apart)
        EXPECT_NE(case_insensitive_key(a), case_insensitive_key(b)) << a << " / " << b;
}

TEST(CaseFold, UncasedAndIllFormedTextIsKeptByteForByte) {
    EXPECT_EQ(case_insensitive_key(""), "");
    EXPECT_EQ(case_insensitive_key("图片/猫 1.jpg"), "图片/猫 1.JPG");
    const std::string broken =
        "a\xFF\xC3"
        "b\xE4\xB8";  // a stray byte, a cut 2- and 3-byte char
    EXPECT_EQ(case_insensitive_key(broken),
              "A\xFF\xC3"
              "B\xE4\xB8");
    EXPECT_EQ(simple_uppercase(U'\u00B5'), U'\u039C');  // micro sign: Greek capital mu
    EXPECT_EQ(simple_uppercase(U'Z'), U'Z');
    EXPECT_EQ(simple_uppercase(0x10FFFF), char32_t{0x10FFFF});
}
