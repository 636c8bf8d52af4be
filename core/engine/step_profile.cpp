#include "core/engine/step_profile.h"

#include <cstdio>

namespace crucible::engine {

StepProfile& StepProfile::current() {
    static StepProfile profile;
    return profile;
}

void StepProfile::add(const std::string& phase, double seconds) {
    for (auto& [name, total] : totals_)
        if (name == phase) {
            total += seconds;
            return;
        }
    totals_.emplace_back(phase, seconds);
}

void StepProfile::reset() {
    totals_.clear();
    steps_ = 0;
}

std::string StepProfile::summary() const {
    std::string out;
    const double steps = steps_ > 0 ? static_cast<double>(steps_) : 1.0;
    for (const auto& [name, total] : totals_) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s%s %.1f ms", out.empty() ? "" : ", ", name.c_str(),
                      1000.0 * total / steps);
        out += buf;
    }
    return out;
}

}  // namespace crucible::engine
