#pragma once
// BatchNorm over the global batch of a data-parallel run (PyTorch's SyncBatchNorm, from its
// description): in training, each channel's mean and variance are those of every rank's images
// together (one all-reduce of the per-channel sums), and the backward pass all-reduces its two
// per-channel reductions, so N ranks compute what one process computes on the whole batch.
// The parameter gradients stay local (the gradient reducer averages them like any other). In
// eval mode it is the module's own BatchNorm (running statistics, no collective).
#include <torch/torch.h>

#include "core/engine/distributed.h"

namespace crucible::engine {

// `bn`'s forward with global batch statistics while `bn` is training; updates its running
// statistics as BatchNorm does (momentum, or the cumulative mean when it has none).
torch::Tensor sync_batch_norm(const torch::Tensor& x, torch::nn::BatchNorm2dImpl& bn,
                              Collective& collective);

}  // namespace crucible::engine
