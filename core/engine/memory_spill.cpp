#include "core/engine/memory_spill.h"

#include <cstdio>

namespace crucible::engine {

std::string format_gib(std::uint64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1u << 30));
    return text;
}

std::optional<MemoryAlarm> MemorySpillWatch::observe(const MemoryWindow& w) {
    if (w.dedicated == 0) return std::nullopt;
    const double fill = static_cast<double>(w.reserved) / static_cast<double>(w.dedicated);
    const std::string figures = "reserved " + format_gib(w.reserved) + ", allocated " +
                                format_gib(w.allocated) + ", card " + format_gib(w.dedicated);
    if (w.reserved > w.dedicated) {
        if (spill_raised_) return std::nullopt;
        spill_raised_ = true;
        return MemoryAlarm{"gpu_memory_spill",
                           "GPU memory over the card's own (" + figures +
                               "): the driver is spilling into system RAM, which makes training "
                               "30-150x slower; lower batch or imgsz, or enable gradient "
                               "checkpointing"};
    }
    spill_raised_ = false;
    const double seconds = w.seconds_per_step;
    if (seconds <= 0) return std::nullopt;
    const bool collapsed = best_seconds_per_step_ > 0 &&
                           seconds > slowdown_ * best_seconds_per_step_ && fill > near_limit_;
    if (!collapsed) {
        slowdown_raised_ = false;
        if (best_seconds_per_step_ == 0 || seconds < best_seconds_per_step_)
            best_seconds_per_step_ = seconds;
        return std::nullopt;
    }
    if (slowdown_raised_) return std::nullopt;
    slowdown_raised_ = true;
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.0fx", seconds / best_seconds_per_step_);
    return MemoryAlarm{"gpu_memory_slowdown",
                       std::string("steps became ") + ratio +
                           " slower with GPU memory near full (" + figures +
                           "): on Windows the driver may be spilling into system RAM; lower "
                           "batch or imgsz"};
}

}  // namespace crucible::engine
