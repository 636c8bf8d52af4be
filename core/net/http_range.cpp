#include "core/net/http_range.h"

#include <algorithm>
#include <optional>

namespace crucible::net {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

// 1 to 19 decimal digits (never overflows 64 bits).
std::optional<std::uint64_t> number(std::string_view s) {
    if (s.empty() || s.size() > 19) return std::nullopt;
    std::uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return v;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return (x | 0x20) == (y | 0x20);
           });
}

}  // namespace

ByteRangeRequest parse_byte_range(std::string_view header, std::uint64_t size) {
    using Kind = ByteRangeRequest::Kind;
    const std::size_t eq = header.find('=');
    if (eq == std::string_view::npos) return {};
    if (!equals_ignoring_case(trim(header.substr(0, eq)), "bytes")) return {};
    // The list's elements; empty ones (",,") do not count. Two or more: refused unread.
    std::string_view spec;
    int count = 0;
    for (std::string_view rest = header.substr(eq + 1);;) {
        const std::size_t comma = rest.find(',');
        const std::string_view item = trim(rest.substr(0, comma));
        if (!item.empty()) {
            if (++count > 1) return {Kind::TooMany};
            spec = item;
        }
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
    }
    if (count == 0) return {};
    const std::size_t dash = spec.find('-');
    if (dash == std::string_view::npos) return {};
    const std::string_view first_text = spec.substr(0, dash);
    const std::string_view last_text = spec.substr(dash + 1);
    if (first_text.empty()) {  // "-N": the last N bytes
        auto n = number(last_text);
        if (!n) return {};
        if (*n == 0 || size == 0) return {Kind::Unsatisfiable};
        return {Kind::Partial, size - std::min(*n, size), size};
    }
    auto first = number(first_text);
    if (!first) return {};
    std::uint64_t end = size;
    if (!last_text.empty()) {
        auto last = number(last_text);
        if (!last || *last < *first) return {};
        end = std::min(*last + 1, size);
    }
    if (*first >= size) return {Kind::Unsatisfiable};
    return {Kind::Partial, *first, end};
}

}  // namespace crucible::net
