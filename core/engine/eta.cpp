#include "core/engine/eta.h"

namespace crucible::engine {

void EtaEstimate::observe(std::int64_t step, Clock::time_point now) {
    if (origin_step_ < 0) {
        origin_step_ = step;
        origin_ = now;
    }
    last_step_ = step;
    last_ = now;
}

double EtaEstimate::seconds_left(std::int64_t total_steps, double fallback_seconds_per_step) const {
    if (last_step_ < 0) return -1;
    const std::int64_t left = total_steps > last_step_ ? total_steps - last_step_ : 0;
    double per_step = fallback_seconds_per_step;
    if (last_step_ > origin_step_)
        per_step = std::chrono::duration<double>(last_ - origin_).count() /
                   static_cast<double>(last_step_ - origin_step_);
    if (per_step <= 0) return -1;
    return per_step * static_cast<double>(left);
}

}  // namespace crucible::engine
