// The language-model head and its cross-entropy in one pass over chunks of rows.
//
// The plain way, `cross_entropy(linear(hidden, weight), target)`, keeps [tokens, vocab] logits,
// their log-softmax, and in backward as many zero-filled gradients of the same size: 130 MB
// each for 1,024 tokens of a 32,000-word vocabulary, a quarter of a small model's LoRA step on the
// CPU. Here each chunk's logits live only while the chunk is handled: its loss is summed and its
// gradient (softmax minus one-hot) goes straight through the head's matmul, so backward only
// scales the saved [tokens, hidden] gradient. Same loss and gradients as the plain way; the
// matmuls are the same, the passes over the logits three instead of about ten.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace crucible::llm {

// Mean cross-entropy of `linear(hidden, weight)` (no bias) against `target`, over the rows whose
// target is not `ignore_index` (NaN when there are none, as cross_entropy gives; the gradients
// are zero then). hidden [N, H], weight [V, H], target [N] int64. Logits and softmax are fp32
// whatever the inputs' dtype. Differentiable in hidden and weight (the weight's gradient is only
// made when it requires one); `chunk_rows` 0 picks about 16 MB of logits a chunk.
torch::Tensor linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                   const torch::Tensor& target, std::int64_t ignore_index = -100,
                                   std::int64_t chunk_rows = 0);

}  // namespace crucible::llm
