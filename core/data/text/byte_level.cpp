#include "core/data/text/byte_level.h"

#include <unordered_map>

#include "core/base/utf8.h"

namespace crucible::data::text {
namespace {

struct ByteMap {
    std::array<std::string, 256> to_symbol;
    std::unordered_map<std::string, unsigned char> to_byte;
    ByteMap() {
        int extra = 0;
        for (int b = 0; b < 256; ++b) {
            const bool printable =
                (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            const char32_t cp =
                printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
            append_utf8(to_symbol[static_cast<std::size_t>(b)], cp);
            to_byte[to_symbol[static_cast<std::size_t>(b)]] = static_cast<unsigned char>(b);
        }
    }
};

const ByteMap& byte_map() {
    static const ByteMap map;
    return map;
}

}  // namespace

const std::array<std::string, 256>& byte_symbols() {
    return byte_map().to_symbol;
}

std::string bytes_to_symbols(std::string_view bytes) {
    const auto& symbols = byte_map().to_symbol;
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char c : bytes)
        out += symbols[c];
    return out;
}

std::string symbols_to_bytes(std::string_view text) {
    const auto& to_byte = byte_map().to_byte;
    std::string out;
    out.reserve(text.size());
    for (std::string_view c : utf8_chars(text)) {
        const auto it = to_byte.find(std::string(c));
        if (it != to_byte.end())
            out += static_cast<char>(it->second);
        else
            out.append(c);
    }
    return out;
}

int parse_byte_piece(std::string_view text) {
    if (text.size() != 6 || !text.starts_with("<0x") || text[5] != '>') return -1;
    int value = 0;
    for (char c : text.substr(3, 2)) {
        value *= 16;
        if (c >= '0' && c <= '9')
            value += c - '0';
        else if (c >= 'A' && c <= 'F')
            value += c - 'A' + 10;
        else
            return -1;
    }
    return value;
}

std::string byte_piece_name(unsigned char byte) {
    static const char* hex = "0123456789ABCDEF";
    std::string name = "<0x00>";
    name[3] = hex[byte >> 4];
    name[4] = hex[byte & 15];
    return name;
}

}  // namespace crucible::data::text
