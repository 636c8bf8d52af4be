#include "core/net/loopback.h"

#include <cctype>

namespace crucible::net {
namespace {

// "a.b.c.d" with each part 0-255 in decimal, no leading '+' or spaces.
bool is_dotted_ipv4(const std::string& text, int& first) {
    int parts = 0;
    std::size_t i = 0;
    while (i <= text.size()) {
        std::size_t digits = 0;
        int value = 0;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && digits < 4) {
            value = value * 10 + (text[i] - '0');
            ++i;
            ++digits;
        }
        if (digits == 0 || digits > 3 || value > 255) return false;
        if (parts == 0) first = value;
        ++parts;
        if (i == text.size()) break;
        if (text[i] != '.') return false;
        ++i;
    }
    return parts == 4;
}

}  // namespace

bool is_loopback_host(const std::string& host) {
    if (host == "localhost" || host == "::1" || host == "[::1]") return true;
    int first = -1;
    return is_dotted_ipv4(host, first) && first == 127;
}

}  // namespace crucible::net
