// POSIX half of stop_signal.h: SIGTERM and SIGINT. The Windows twin is stop_signal_windows.cpp.
#ifndef _WIN32
#include <signal.h>

#include <atomic>
#include <csignal>

#include "core/base/stop_signal.h"

namespace crucible {
namespace detail {
extern std::atomic<bool> g_stop_requested;
}

namespace {
void on_stop_signal(int) {
    detail::g_stop_requested.store(true);
}
}  // namespace

void listen_for_stop_requests() {
    std::signal(SIGTERM, on_stop_signal);
    std::signal(SIGINT, on_stop_signal);
}

bool request_process_stop(long pid) {
    return pid > 0 && ::kill(static_cast<pid_t>(pid), SIGTERM) == 0;
}

}  // namespace crucible
#endif
