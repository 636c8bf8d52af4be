#pragma once
// Gradient (activation) checkpointing: a block runs forward without keeping its intermediate
// activations, and runs again during backward to rebuild them. Memory for activations drops
// to the blocks' inputs, for about one extra forward pass of compute. LibTorch has no
// torch.utils.checkpoint, so this is an autograd function of our own:
// - the recomputation sees the same random numbers as the first pass (dropout masks): the
//   default generator of the (first) input's device is saved before the block and restored
//   around the recomputation;
// - CUDA autocast is repeated when it was on in the forward pass;
// - parameters used inside the block get their gradients from the nested backward, as in a
//   plain backward (accumulated into .grad), so frozen inputs (a LoRA model's embeddings) do
//   not cut the adapters inside the block off from the loss.
#include <torch/torch.h>

#include <functional>
#include <vector>

namespace crucible::engine {

using CheckpointedBlock = std::function<torch::Tensor(const torch::Tensor&)>;
using CheckpointedMultiBlock = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;

// block(inputs), without its activations kept when gradients are recorded; a plain call
// otherwise (no grad mode, evaluation). Every input that requires grad gets its gradient, each
// in its own dtype and shape. `block` is kept until the backward pass: it must own (capture by
// value) everything it uses. Tensors that need gradients must come in as `inputs`: a captured
// tensor with its own graph would be backpropagated through once per replay. `inputs`: at least
// one, all defined.
torch::Tensor checkpointed(CheckpointedMultiBlock block, const std::vector<torch::Tensor>& inputs);

// The one-input form: block(input), as above.
torch::Tensor checkpointed(CheckpointedBlock block, const torch::Tensor& input);

}  // namespace crucible::engine
