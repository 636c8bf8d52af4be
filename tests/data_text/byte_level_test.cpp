// core/data/text/byte_level.h: GPT-2's byte-level map (every byte, both ways) and byte-fallback
// piece names.
#include "core/data/text/byte_level.h"

#include <gtest/gtest.h>

#include <set>

namespace crucible::data::text {
namespace {

TEST(ByteLevel, ByteSymbolsAreGpt2sMap) {
    const auto& s = byte_symbols();
    EXPECT_EQ(std::set<std::string>(s.begin(), s.end()).size(), 256u);
    EXPECT_EQ(s['a'], "a");
    EXPECT_EQ(s['!'], "!");
    EXPECT_EQ(s[' '], "\xC4\xA0");   // U+0120 "Ġ"
    EXPECT_EQ(s['\n'], "\xC4\x8A");  // U+010A "Ċ"
    EXPECT_EQ(s[0], "\xC4\x80");     // U+0100
    EXPECT_EQ(s[0xAD], "\xC5\x83");  // soft hyphen is not printable: U+0143
    EXPECT_EQ(s[0xE9], "\xC3\xA9");  // printable Latin-1 maps to itself
    EXPECT_EQ(s[0xFF], "\xC3\xBF");
}

TEST(ByteLevel, EveryByteStringRoundTrips) {
    std::string all;
    for (int b = 0; b < 256; ++b)
        all += static_cast<char>(b);
    const std::string symbols = bytes_to_symbols(all + "中\xFF");
    EXPECT_EQ(symbols_to_bytes(symbols), all + "中\xFF");
    EXPECT_EQ(bytes_to_symbols(" hi"), "\xC4\xA0hi");
    // Characters that stand for no byte are kept (a ByteLevel decoder meets added tokens).
    EXPECT_EQ(symbols_to_bytes("\xC4\xA0x<|eot|>中"), " x<|eot|>\xE4\xB8\xAD");
}

TEST(ByteLevel, BytePieceNames) {
    for (int b = 0; b < 256; ++b)
        EXPECT_EQ(parse_byte_piece(byte_piece_name(static_cast<unsigned char>(b))), b);
    EXPECT_EQ(byte_piece_name(0x0A), "<0x0A>");
    EXPECT_EQ(parse_byte_piece("<0xE4>"), 0xE4);
    for (const char* bad : {"<0xe4>", "<0xZZ>", "<0x4>", "<0x0A", "0x0A>", "<0x0AB>", "", "a"})
        EXPECT_EQ(parse_byte_piece(bad), -1) << bad;
}

}  // namespace
}  // namespace crucible::data::text
