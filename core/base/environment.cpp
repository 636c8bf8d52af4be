#include "core/base/environment.h"

#include <array>

#include "core/base/error.h"

namespace crucible {

std::optional<std::string> nonempty_environment_variable(const std::string& name) {
    auto value = environment_variable(name);
    if (value && value->empty()) return std::nullopt;
    return value;
}

std::string utc_time_text(std::time_t time, const char* format) {
    const std::tm tm = utc_calendar_time(time);
    std::array<char, 128> buffer{};
    const std::size_t n = std::strftime(buffer.data(), buffer.size(), format, &tm);
    return std::string(buffer.data(), n);
}

// Backslashes are literal unless they precede a quote, where they must be doubled; a quote is
// escaped with a backslash; a tab, newline or space needs the whole argument quoted.
std::string quote_windows_argument(const std::string& arg) {
    if (!arg.empty() && arg.find_first_of(" \t\n\v\"") == std::string::npos) return arg;
    std::string out = "\"";
    std::size_t backslashes = 0;
    for (char c : arg) {
        if (c == '\\') {
            ++backslashes;
            continue;
        }
        if (c == '"') {
            out.append(backslashes * 2 + 1, '\\');
        } else {
            out.append(backslashes, '\\');
        }
        backslashes = 0;
        out += c;
    }
    out.append(backslashes * 2, '\\');
    out += '"';
    return out;
}

std::filesystem::path sibling_program(const std::string& name, const std::string& build_folder) {
#ifdef _WIN32
    const std::filesystem::path file = std::filesystem::path(name).concat(".exe");
#else
    const std::filesystem::path file = name;
#endif
    const auto dir = this_executable().parent_path();
    const auto beside = dir / file;
    std::error_code ec;
    if (std::filesystem::exists(beside, ec)) return beside;
    const auto in_build_tree = dir.parent_path() / build_folder / file;
    if (std::filesystem::exists(in_build_tree, ec)) return in_build_tree;
    // Multi-config trees put each configuration in a folder of its own name.
    const auto config = dir.filename();
    for (const char* known : {"Release", "Debug", "RelWithDebInfo", "MinSizeRel"}) {
        if (config != known) continue;
        const auto in_config_tree = dir.parent_path().parent_path() / build_folder / config / file;
        if (std::filesystem::exists(in_config_tree, ec)) return in_config_tree;
    }
    return beside;
}

}  // namespace crucible
