// core/base/utf8.h: the strict decoder and validator against a table of hostile byte strings
// (truncated sequences, overlongs, surrogates, code points above U+10FFFF, stray continuation
// bytes), the lossy form's one U+FFFD per maximal subpart (the Unicode standard's own example),
// the encoder's boundaries, and inputs of many megabytes.
#include "core/base/utf8.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

using namespace crucible;

namespace {

const std::string R(kReplacementUtf8);

struct HostileCase {
    const char* name;
    std::string bytes;
    bool valid;
    std::string lossy;  // utf8_lossy(bytes)
};

std::vector<HostileCase> hostile_cases() {
    return {
        {"empty", "", true, ""},
        {"ascii", "plain", true, "plain"},
        {"NUL is a character", std::string("a\0b", 3), true, std::string("a\0b", 3)},
        {"Chinese", "数据集/图片.jpg", true, "数据集/图片.jpg"},
        {"emoji (4 bytes)", "\xF0\x9F\x91\x8B", true, "\xF0\x9F\x91\x8B"},
        {"U+D7FF, the last before the surrogates", "\xED\x9F\xBF", true, "\xED\x9F\xBF"},
        {"U+E000, the first after them", "\xEE\x80\x80", true, "\xEE\x80\x80"},
        {"U+10FFFF, the last code point", "\xF4\x8F\xBF\xBF", true, "\xF4\x8F\xBF\xBF"},
        {"U+FFFD itself", R, true, R},
        // Truncated: the maximal subpart is one replacement.
        {"truncated 3-byte at the end", "abc\xE6\x95", false, "abc" + R},
        {"truncated 4-byte at the end", "\xF0\x9F\x91", false, R},
        {"truncated 3-byte, then ASCII", "\xE4\xB8x", false, R + "x"},
        {"truncated 2-byte, then a lead", "\xC3\xE4\xB8\xAD", false, R + "中"},
        {"lead byte alone", "\xE4", false, R},
        // Overlongs: C0 and C1 never start a character; E0 needs A0.., F0 needs 90..
        {"overlong '/' (C0 AF)", "\xC0\xAF", false, R + R},
        {"overlong NUL (C1 80)", "\xC1\x80", false, R + R},
        {"overlong 3-byte (E0 80 AF)", "\xE0\x80\xAF", false, R + R + R},
        {"overlong 4-byte (F0 80 80 AF)", "\xF0\x80\x80\xAF", false, R + R + R + R},
        // Surrogates: ED needs ..9F.
        {"high surrogate (ED A0 80)", "\xED\xA0\x80", false, R + R + R},
        {"low surrogate pair as CESU-8", "\xED\xA0\xBD\xED\xB8\x80", false, R + R + R + R + R + R},
        // Above U+10FFFF: F4 needs ..8F, F5..FF never start a character.
        {"U+110000 (F4 90 80 80)", "\xF4\x90\x80\x80", false, R + R + R + R},
        {"F5 lead", "\xF5\x80\x80\x80", false, R + R + R + R},
        {"FF and FE", "\xFE\xFF", false, R + R},
        {"lone continuation bytes", "\x80\xBF", false, R + R},
        {"valid, bad, valid", "中\xFF文", false, "中" + R + "文"},
        // The Unicode standard's example of maximal subparts (chapter 3, Table 3-8 in 15.0).
        {"Unicode's example", "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64", false,
         "a" + R + R + R + "b" + R + "c" + R + R + "d"},
    };
}

}  // namespace

TEST(Utf8, HostileTableIsValidatedAndReplacedPerMaximalSubpart) {
    for (const auto& c : hostile_cases()) {
        EXPECT_EQ(is_valid_utf8(c.bytes), c.valid) << c.name;
        EXPECT_EQ(utf8_lossy(c.bytes), c.lossy) << c.name;
        EXPECT_TRUE(is_valid_utf8(utf8_lossy(c.bytes))) << c.name;
        // The pieces cover the bytes exactly, and the code points agree with the lossy text.
        std::string joined, reencoded;
        for (auto piece : utf8_chars(c.bytes))
            joined.append(piece);
        EXPECT_EQ(joined, c.bytes) << c.name;
        for (char32_t cp : decode_utf8_lossy(c.bytes))
            append_utf8(reencoded, cp);
        EXPECT_EQ(reencoded, c.lossy) << c.name;
    }
}

TEST(Utf8, DecodeCharReportsCodePointLengthAndValidity) {
    const Utf8Char han = decode_utf8_char("x中", 1);
    EXPECT_EQ(han.code_point, U'中');
    EXPECT_EQ(han.length, 3u);
    EXPECT_TRUE(han.valid);
    const Utf8Char cut = decode_utf8_char("\xF0\x9F\x91", 0);
    EXPECT_EQ(cut.code_point, kReplacementCharacter);
    EXPECT_EQ(cut.length, 3u);  // never past the end
    EXPECT_FALSE(cut.valid);
    const Utf8Char overlong = decode_utf8_char("\xE0\x80\xAF", 0);
    EXPECT_EQ(overlong.length, 1u);
    EXPECT_FALSE(overlong.valid);
}

TEST(Utf8, EncoderBoundariesRoundTripAndNonScalarValuesBecomeReplacement) {
    const std::vector<std::pair<char32_t, std::size_t>> boundaries{
        {0x0, 1},    {0x7F, 1},   {0x80, 2},   {0x7FF, 2},   {0x800, 3},
        {0xD7FF, 3}, {0xE000, 3}, {0xFFFF, 3}, {0x10000, 4}, {0x10FFFF, 4}};
    for (const auto& [cp, length] : boundaries) {
        std::string s;
        append_utf8(s, cp);
        EXPECT_EQ(s.size(), length) << std::hex << static_cast<unsigned>(cp);
        const Utf8Char back = decode_utf8_char(s, 0);
        EXPECT_TRUE(back.valid);
        EXPECT_EQ(back.code_point, cp);
    }
    for (char32_t bad :
         {char32_t{0xD800}, char32_t{0xDFFF}, char32_t{0x110000}, char32_t{0xFFFFFFFF}}) {
        std::string s;
        append_utf8(s, bad);
        EXPECT_EQ(s, R) << std::hex << static_cast<unsigned>(bad);
    }
    // Every scalar value survives encode + strict decode.
    std::string all;
    for (char32_t cp = 0; cp <= 0x10FFFF; ++cp)
        if (cp < 0xD800 || cp > 0xDFFF) append_utf8(all, cp);
    ASSERT_TRUE(is_valid_utf8(all));
    const std::u32string decoded = decode_utf8_lossy(all);
    ASSERT_EQ(decoded.size(), 0x110000u - 0x800u);
    EXPECT_EQ(decoded[0x41], U'A');
    EXPECT_EQ(decoded.back(), U'\U0010FFFF');
}

TEST(Utf8, HugeInputsAreLinear) {
    // 30 MB of Chinese with one bad byte at the end, and 8 MB of stray continuation bytes.
    std::string han;
    for (int i = 0; i < 10'000'000; ++i)
        han += "中";
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(is_valid_utf8(han));
    han += '\xFF';
    EXPECT_FALSE(is_valid_utf8(han));
    const std::string lossy = utf8_lossy(han);
    EXPECT_EQ(lossy.size(), han.size() + 2);
    EXPECT_TRUE(lossy.ends_with(R));
    const std::string junk(8'000'000, '\x80');
    EXPECT_EQ(utf8_lossy(junk).size(), 3 * junk.size());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 20.0);  // about 0.3 s in a Release build
}
