#pragma once
// Where a training step's time goes (data wait, forward, loss, backward, optimizer, EMA): the
// trainer and tasks time their phases with PhaseTimer; the trainer logs the averages at every
// epoch end and benchmarks read them. Main-thread only. On CUDA the phases are timed on the
// host (kernels run asynchronously), so only the whole step is meaningful there.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace crucible::engine {

// Seconds per phase (in the order first seen) over a number of steps.
struct PhaseTotals {
    std::vector<std::pair<std::string, double>> totals;
    long long steps = 0;
    // "data 1.2 ms, forward 80.1 ms, ..." per step.
    std::string summary() const;
};

class StepProfile {
  public:
    static StepProfile& current();
    void add(const std::string& phase, double seconds);
    void count_step() { ++epoch_.steps; }
    void reset() { epoch_ = {}; }
    // Ends an epoch: its figures become last_epoch() and counting starts over.
    void finish_epoch() {
        last_ = std::move(epoch_);
        epoch_ = {};
    }
    const PhaseTotals& this_epoch() const { return epoch_; }
    const PhaseTotals& last_epoch() const { return last_; }

  private:
    PhaseTotals epoch_, last_;
};

class PhaseTimer {
  public:
    explicit PhaseTimer(const char* phase)
        : phase_(phase), start_(std::chrono::steady_clock::now()) {}
    ~PhaseTimer() {
        StepProfile::current().add(
            phase_,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    }
    PhaseTimer(const PhaseTimer&) = delete;
    PhaseTimer& operator=(const PhaseTimer&) = delete;

  private:
    const char* phase_;
    std::chrono::steady_clock::time_point start_;
};

}  // namespace crucible::engine
