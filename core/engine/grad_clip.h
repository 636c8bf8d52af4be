#pragma once
// Gradient clipping by total L2 norm without waiting for the device: LibTorch's
// clip_grad_norm_ computes the same scale (max_norm / (norm + 1e-6), at most 1) but returns the
// norm as a double, a host read in every step. Here the scale stays a tensor.
#include <torch/torch.h>

#include <vector>

namespace crucible::engine {

// Scales the gradients of `params` in place so their total L2 norm is at most `max_norm`;
// returns that norm (before clipping) as a one-element tensor on the gradients' device.
torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

}  // namespace crucible::engine
