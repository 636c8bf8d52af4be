#include "core/engine/step_profile.h"

#include <cstdio>

namespace crucible::engine {

StepProfile& StepProfile::current() {
    static StepProfile profile;
    return profile;
}

void StepProfile::add(const std::string& phase, double seconds) {
    for (auto& [name, total] : epoch_.totals)
        if (name == phase) {
            total += seconds;
            return;
        }
    epoch_.totals.emplace_back(phase, seconds);
}

std::string PhaseTotals::summary() const {
    std::string out;
    const double n = steps > 0 ? static_cast<double>(steps) : 1.0;
    for (const auto& [name, total] : totals) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s%s %.1f ms", out.empty() ? "" : ", ", name.c_str(),
                      1000.0 * total / n);
        out += buf;
    }
    return out;
}

}  // namespace crucible::engine
