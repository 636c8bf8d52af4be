#include "core/base/utf8.h"

namespace crucible {

Utf8Char decode_utf8_char(std::string_view text, std::size_t pos) {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const unsigned lead = p[pos];
    if (lead < 0x80) return {lead, 1, true};
    // Table 3-7 of the Unicode standard: the second byte's range depends on the lead byte, the
    // later ones are always 80..BF.
    std::size_t need = 0;
    char32_t cp = 0;
    unsigned low = 0x80, high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
        need = 1;
        cp = lead & 0x1F;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        need = 2;
        cp = lead & 0x0F;
        if (lead == 0xE0) low = 0xA0;   // no overlongs
        if (lead == 0xED) high = 0x9F;  // no surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        need = 3;
        cp = lead & 0x07;
        if (lead == 0xF0) low = 0x90;   // no overlongs
        if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
    } else {
        return {kReplacementCharacter, 1, false};  // 80..C1, F5..FF never start a character
    }
    std::size_t length = 1;
    for (std::size_t k = 0; k < need; ++k) {
        if (pos + length >= text.size()) return {kReplacementCharacter, length, false};
        const unsigned b = p[pos + length];
        if (b < low || b > high) return {kReplacementCharacter, length, false};
        cp = (cp << 6) | (b & 0x3F);
        ++length;
        low = 0x80;
        high = 0xBF;
    }
    return {cp, length, true};
}

bool is_valid_utf8(std::string_view text) {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    for (std::size_t i = 0; i < text.size();) {
        if (p[i] < 0x80) {
            ++i;
            continue;
        }
        const Utf8Char c = decode_utf8_char(text, i);
        if (!c.valid) return false;
        i += c.length;
    }
    return true;
}

void append_utf8(std::string& out, char32_t cp) {
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = kReplacementCharacter;
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

std::vector<std::string_view> utf8_chars(std::string_view text) {
    std::vector<std::string_view> out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t n = decode_utf8_char(text, i).length;
        out.push_back(text.substr(i, n));
        i += n;
    }
    return out;
}

std::string utf8_lossy(std::string_view bytes) {
    if (is_valid_utf8(bytes)) return std::string(bytes);
    std::string out;
    out.reserve(bytes.size() + 8);
    for (std::size_t i = 0; i < bytes.size();) {
        const Utf8Char c = decode_utf8_char(bytes, i);
        if (c.valid)
            out.append(bytes.substr(i, c.length));
        else
            out.append(kReplacementUtf8);
        i += c.length;
    }
    return out;
}

std::u32string decode_utf8_lossy(std::string_view bytes) {
    std::u32string out;
    out.reserve(bytes.size());
    for (std::size_t i = 0; i < bytes.size();) {
        const Utf8Char c = decode_utf8_char(bytes, i);
        out.push_back(c.code_point);
        i += c.length;
    }
    return out;
}

}  // namespace crucible
