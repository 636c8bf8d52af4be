#include "core/jobs/child_process.h"

#include <csignal>
#include <cstring>

namespace crucible::jobs {

std::string ExitInfo::describe() const {
    if (signal != 0) {
#ifndef _WIN32
        const char* name = strsignal(signal);
        return "killed by signal " + std::to_string(signal) +
               (name ? std::string(" (") + name + ")" : "");
#else
        return "killed by signal " + std::to_string(signal);
#endif
    }
    return "exit code " + std::to_string(code);
}

}  // namespace crucible::jobs
