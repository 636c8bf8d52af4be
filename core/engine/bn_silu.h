#pragma once
// BatchNorm2d followed by SiLU, fused for training on the CPU (the Conv block of YOLO and most
// convolutional detectors). LibTorch runs them as four passes forward (statistics, normalise,
// SiLU) and four backward, and keeps the normalised tensor for SiLU's backward. Fused: two passes
// forward (statistics, then the output), two backward (the per-channel sums, then dx), nothing
// kept but the input, and a channel slice of a wider gradient (what torch::cat's backward hands
// back) read in place. The kernels are core/engine/bn_silu_simd.h's (AVX-512).
//
// The result equals bn.forward(x) followed by torch::silu within float rounding (the statistics
// are summed in double), and the running statistics, num_batches_tracked and all gradients move
// as BatchNorm's do.
#include <torch/torch.h>

#include <optional>

namespace crucible::engine {

// silu(bn(x)) through the fused kernels when they can take it: `bn` training with affine
// parameters, running statistics and a momentum; x a 4-D float CPU tensor in channels-last
// layout whose channel count is a multiple of 16; a CPU with AVX-512; fused kernels enabled
// (fused_kernels.h). Else nullopt, and the caller runs the two modules.
std::optional<torch::Tensor> fused_bn_silu(const torch::Tensor& x, torch::nn::BatchNorm2dImpl& bn);

}  // namespace crucible::engine
