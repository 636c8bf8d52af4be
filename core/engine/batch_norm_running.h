#pragma once
// The running statistics a BatchNorm keeps in training, moved by one batch's statistics as
// LibTorch's BatchNorm moves them: num_batches_tracked + 1, then each running value towards the
// batch's by the momentum (or, without one, the cumulative mean), the variance unbiased. Shared
// by the batch norms computed outside the module (SyncBatchNorm, the fused CPU batch norm + SiLU).
#include <torch/torch.h>

namespace crucible::engine {

// `mean` and `biased_var`: the batch's per-channel statistics (any float dtype and device) over
// `count` values per channel. Does nothing when `bn` keeps no running statistics.
void update_running_statistics(torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& mean,
                               const torch::Tensor& biased_var, double count);

}  // namespace crucible::engine
