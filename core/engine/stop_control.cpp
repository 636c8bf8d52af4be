#include "core/engine/stop_control.h"

#include <atomic>
#include <csignal>
#include <utility>

namespace crucible::engine {

namespace {

volatile std::sig_atomic_t g_signal_stop = 0;

void on_stop_signal(int) {
    g_signal_stop = 1;
}

}  // namespace

StopControl::StopControl(std::filesystem::path job_dir, bool reads_folder)
    : job_{std::move(job_dir)}, reads_folder_(reads_folder) {}

StopRequest StopControl::poll() {
    if (g_signal_stop) {
        g_signal_stop = 0;
        return StopRequest::Checkpoint;
    }
    return reads_folder_ ? take_stop_request(job_) : StopRequest::None;
}

void install_stop_signal_handlers() {
    std::signal(SIGTERM, on_stop_signal);
    std::signal(SIGINT, on_stop_signal);
}

bool signal_stop_pending() {
    return g_signal_stop != 0;
}

void set_signal_stop_flag(bool value) {
    g_signal_stop = value ? 1 : 0;
}

}  // namespace crucible::engine
