#include "core/engine/stop_control.h"

#include <utility>

#include "core/base/stop_signal.h"

namespace crucible::engine {

StopControl::StopControl(std::filesystem::path job_dir, bool reads_folder)
    : job_{std::move(job_dir)}, reads_folder_(reads_folder) {}

StopRequest StopControl::poll() {
    if (stop_requested()) {
        set_stop_requested(false);
        return StopRequest::Checkpoint;
    }
    return reads_folder_ ? take_stop_request(job_) : StopRequest::None;
}

void install_stop_signal_handlers() {
    listen_for_stop_requests();
}

bool signal_stop_pending() {
    return stop_requested();
}

void set_signal_stop_flag(bool value) {
    set_stop_requested(value);
}

}  // namespace crucible::engine
