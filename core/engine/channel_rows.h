#pragma once
// A 4-D float channels-last tensor, or a channel slice of a wider one (what torch::cat's backward
// and chunk hand out), as rows of channels: pixel p's channels at data + p * stride. The fused
// CPU kernels (bn_silu.h, channel_cat.h) read such slices in place.
#include <torch/torch.h>

#include "core/engine/bn_silu_simd.h"

namespace crucible::engine {

// The rows of `t` (4-D, float); data null where it is laid out otherwise. Strides of dimensions
// of size 1 say nothing, so they are not checked.
ChannelRows channel_rows_of(const torch::Tensor& t);

}  // namespace crucible::engine
