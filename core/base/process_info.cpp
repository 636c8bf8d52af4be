#include "core/base/process_info.h"

namespace crucible {

bool is_same_process(long pid, const std::string& token) {
    if (!process_alive(pid)) return false;
    if (token.empty()) return true;
    const std::string now = process_start_token(pid);
    return now.empty() || now == token;
}

}  // namespace crucible
