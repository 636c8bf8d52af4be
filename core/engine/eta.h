#pragma once
// The time a run has left, as the progress events and the log say it: the seconds per step
// averaged over everything this process trained so far (validation, checkpoints and data waits
// included, each in its share), from the first reported step on (so model and data start-up do
// not count). An estimate from the last logging window alone swung with every validation
// (7m33s -> 36s -> 7m in one run).
#include <chrono>
#include <cstdint>

namespace crucible::engine {

class EtaEstimate {
  public:
    using Clock = std::chrono::steady_clock;
    // A step reported at `now`; the first one only sets the origin.
    void observe(std::int64_t step, Clock::time_point now);
    // Seconds for the steps from the last observed one to `total_steps`; `fallback` seconds per
    // step until two observations exist; negative when there is no estimate at all.
    double seconds_left(std::int64_t total_steps, double fallback_seconds_per_step) const;

  private:
    std::int64_t origin_step_ = -1, last_step_ = -1;
    Clock::time_point origin_, last_;
};

}  // namespace crucible::engine
