#include "core/base/burst_limit.h"

namespace crucible {

BurstLimit::Verdict BurstLimit::admit(Clock::time_point now) {
    Verdict verdict;
    if (!started_ || now - window_start_ >= window_) {
        started_ = true;
        window_start_ = now;
        in_window_ = 0;
        verdict.held_back_before = held_back_;
        held_back_ = 0;
    }
    if (in_window_ >= per_window_) {
        ++held_back_;
        return {false, 0};
    }
    ++in_window_;
    verdict.pass = true;
    return verdict;
}

}  // namespace crucible
