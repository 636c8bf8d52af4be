#pragma once
// The epoch's loss sums, kept on the model's device so that a training step never waits for
// the device to read them: each step adds its loss items there, and the host reads them (one
// read) only when it reports, checkpoints or ends the epoch. A non-finite total loss is noted
// on the device too, with its step, and reported at that read.
#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace crucible::engine {

class DeviceLossSums {
  public:
    // Continues from `sums` (the host's values: zeros at an epoch's start, restored ones after a
    // resume), so a sum is added in the same order whenever it is read.
    void reset(const std::vector<double>& sums, const torch::Device& device);
    // One step's total loss (checked for inf / NaN) and loss items (one per sum; missing ones
    // count as 0, extra ones are ignored). `step` is the run's step index.
    void add(const torch::Tensor& total, const torch::Tensor& items, std::int64_t step);

    struct NonFinite {
        std::int64_t step;
        double value;
    };
    // One host read: the sums into `sums`, and the first step whose total was not finite.
    std::optional<NonFinite> read(std::vector<double>& sums);

  private:
    torch::Tensor values_;    // [n + 2] double: the sums, then the bad step (-1: none) and value
    std::int64_t count_ = 0;  // n
};

}  // namespace crucible::engine
