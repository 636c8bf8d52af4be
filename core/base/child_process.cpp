#include "core/base/child_process.h"

#include <thread>

namespace crucible {

namespace {
// The signals a worker dies of, by their POSIX numbers (strsignal is POSIX-only).
const char* signal_name(int signal) {
    switch (signal) {
        case 2:
            return "SIGINT";
        case 4:
            return "SIGILL";
        case 6:
            return "SIGABRT";
        case 7:
            return "SIGBUS";
        case 8:
            return "SIGFPE";
        case 9:
            return "SIGKILL";
        case 11:
            return "SIGSEGV";
        case 15:
            return "SIGTERM";
        default:
            return nullptr;
    }
}
}  // namespace

std::string ExitInfo::describe() const {
    if (signal != 0) {
        const char* name = signal_name(signal);
        return "killed by signal " + std::to_string(signal) +
               (name ? std::string(" (") + name + ")" : "");
    }
    return "exit code " + std::to_string(code);
}

std::optional<ExitInfo> ChildProcess::wait_for(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        if (auto exit = poll()) return exit;
        if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

}  // namespace crucible
