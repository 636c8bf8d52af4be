#pragma once
// Gradient checkpointing of the SD models' blocks (option `gradient_checkpointing`): a UNet ResNet
// or spatial transformer, or a CLIP encoder layer, runs under engine::checkpointed (its
// activations are not kept; it runs again in backward). Blocks take a second input besides the
// hidden states (time embedding, text states, attention mask):
// - without a gradient (time embedding, mask, text states of a frozen text encoder) it is
//   captured as a constant;
// - with one (text states while the text encoder's LoRA trains) it is a second input of the
//   checkpointed function, so its gradient flows back through the ordinary graph once; captured,
//   every block's own backward would run through the text encoder's graph again.
// A block that can produce no gradient (frozen input, nothing trainable inside) runs plainly:
// nothing inside it is recorded anyway.
#include <torch/torch.h>

#include <functional>

namespace crucible::sd {

using BlockWithSideInput =
    std::function<torch::Tensor(const torch::Tensor& x, const torch::Tensor& side)>;

// block(x, side), checkpointed as described above. `block` must own (capture by value) what it
// uses. `trainable_inside`: has_trainable_parameters() of the block's module.
torch::Tensor checkpointed_block(const BlockWithSideInput& block, const torch::Tensor& x,
                                 const torch::Tensor& side, bool trainable_inside);

// Whether a parameter of `module` (recursively) or a LoRA adapter installed in one of its Linear /
// Conv2d layers requires grad.
bool has_trainable_parameters(torch::nn::Module& module);

}  // namespace crucible::sd
