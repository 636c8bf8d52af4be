// Rotary position embedding as one differentiable op.
//
// The Hugging Face formula, x * cos + rotate_half(x) * sin with rotate_half = cat(-x2, x1), makes
// five whole-tensor passes and, in backward, zero-filled gradients for each half's slice. Written
// on the two halves directly it is two multiplies and two multiply-adds a half, and backward is
// the inverse rotation, the same four operations with sin negated: about a third of the work.
#pragma once

#include <torch/torch.h>

namespace crucible::llm {

// Rotates the pairs (x[..., i], x[..., i + D/2]) of x [B, T, heads, D] by the angles whose cos and
// sin are `cos`, `sin` [T, D/2] (position t, frequency i). Differentiable in x (the tables are
// constants); the result has x's dtype and layout.
torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& cos,
                           const torch::Tensor& sin);

}  // namespace crucible::llm
