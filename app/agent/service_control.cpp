#include "app/agent/service_control.h"

namespace crucible::agent {

// The rules CommandLineToArgvW and the MSVC runtime parse with: backslashes are literal unless
// they precede a quote, where they must be doubled; a quote is escaped with a backslash.
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

}  // namespace crucible::agent
