#include "core/base/stop_signal.h"

#include <atomic>

namespace crucible {
namespace detail {
// Shared by the platform halves; lock-free, so a signal handler may set it.
std::atomic<bool> g_stop_requested{false};
std::atomic<bool> g_stop_finished{false};
}  // namespace detail

bool stop_requested() {
    return detail::g_stop_requested.load();
}

void set_stop_requested(bool value) {
    detail::g_stop_requested.store(value);
}

void stop_finished() {
    detail::g_stop_finished.store(true);
}

}  // namespace crucible
