#include "core/data/formats/path_text.h"

#include "core/base/file_io.h"
#include "core/base/utf8.h"

namespace crucible::data::detail {
namespace fs = std::filesystem;

std::string safe_utf8(std::string_view text) {
    if (is_valid_utf8(text)) return std::string(text);
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
        const Utf8Char c = decode_utf8_char(text, i);
        if (c.valid) {
            out.append(text.substr(i, c.length));
            i += c.length;
        } else {
            // Each byte of an ill-formed sequence shown as itself.
            static const char* hex = "0123456789abcdef";
            const auto u = static_cast<unsigned char>(text[i]);
            out += "\\x";
            out += hex[u >> 4];
            out += hex[u & 15];
            ++i;
        }
    }
    return out;
}

fs::path normalized_absolute(const fs::path& path) {
    std::error_code ec;
    auto abs = fs::absolute(path, ec);
    if (ec) abs = path;
    abs = abs.lexically_normal();
    if (!abs.has_filename() && abs.has_relative_path()) abs = abs.parent_path();  // "a/b/" -> "a/b"
    return abs;
}

std::string display_path(const fs::path& path, const fs::path& root) {
    if (!root.empty()) {
        const auto rel = normalized_absolute(path).lexically_relative(normalized_absolute(root));
        if (!rel.empty() && *rel.begin() != "..") {
            const auto u8 = rel.generic_u8string();
            return safe_utf8(std::string(u8.begin(), u8.end()));
        }
    }
    return safe_utf8(path_to_utf8(path));
}

bool lexically_inside(const fs::path& root, const fs::path& candidate) {
    const auto rel = normalized_absolute(candidate).lexically_relative(normalized_absolute(root));
    if (rel.empty()) return false;  // different root names (Windows drives)
    return *rel.begin() != "..";
}

}  // namespace crucible::data::detail
