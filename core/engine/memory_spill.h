#pragma once
// Watches a training run's GPU memory for the failure Windows hides: when a process needs more
// than the card's dedicated memory, the WDDM driver quietly spills it into system RAM over PCIe
// instead of failing, and training goes on 30-150 times slower. Two signs raise an alarm, once
// per episode: the caching allocator's reserved bytes pass the card's dedicated memory, or the
// step time collapses (several times the best seen) while reserved memory is near the limit.
// Plain arithmetic on figures the trainer passes in, so it is tested by simulation.
#include <cstdint>
#include <optional>
#include <string>

namespace crucible::engine {

struct MemoryWindow {
    std::uint64_t allocated = 0;      // bytes the caching allocator has handed out
    std::uint64_t reserved = 0;       // bytes it holds from the driver
    std::uint64_t dedicated = 0;      // the card's own memory
    double seconds_per_step = 0;      // over the window
    std::uint64_t peak_reserved = 0;  // the most the allocator held since the process started
};

struct MemoryAlarm {
    std::string alarm;  // "gpu_memory_spill" or "gpu_memory_slowdown"
    std::string message;
};

class MemorySpillWatch {
  public:
    // A step this many times slower than the best window, with reserved memory above
    // `near_limit` of the card, counts as a collapse.
    explicit MemorySpillWatch(double slowdown = 5.0, double near_limit = 0.9)
        : slowdown_(slowdown), near_limit_(near_limit) {}

    // One report window; an alarm when a sign appears (not again until it has cleared).
    std::optional<MemoryAlarm> observe(const MemoryWindow& window);

  private:
    double slowdown_, near_limit_;
    double best_seconds_per_step_ = 0;
    bool spill_raised_ = false, slowdown_raised_ = false;
};

// "3.2 GiB"
std::string format_gib(std::uint64_t bytes);

}  // namespace crucible::engine
