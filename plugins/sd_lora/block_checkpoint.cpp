#include "plugins/sd_lora/block_checkpoint.h"

#include <torch/torch.h>

#include <vector>

#include "core/engine/activation_checkpoint.h"
#include "plugins/sd_lora/nn.h"

namespace crucible::sd {

torch::Tensor checkpointed_block(const BlockWithSideInput& block, const torch::Tensor& x,
                                 const torch::Tensor& side, bool trainable_inside) {
    const bool side_grad = side.defined() && side.requires_grad();
    if (!torch::GradMode::is_enabled() || (!x.requires_grad() && !side_grad && !trainable_inside))
        return block(x, side);
    if (!side_grad)
        return engine::checkpointed(
            [block, side](const torch::Tensor& in) { return block(in, side); }, x);
    // One flat input in the wider of the two dtypes; each part goes back to its own shape and
    // dtype (a widening cast and back is exact), so the block computes what it would unpacked.
    const auto x_shape = x.sizes().vec(), side_shape = side.sizes().vec();
    const auto x_type = x.scalar_type(), side_type = side.scalar_type();
    const auto wide = c10::promoteTypes(x_type, side_type);
    const std::int64_t n = x.numel();
    const torch::Tensor packed =
        torch::cat({x.reshape({-1}).to(wide), side.reshape({-1}).to(wide)});
    return engine::checkpointed(
        [block, x_shape, side_shape, x_type, side_type, n](const torch::Tensor& in) {
            return block(in.narrow(0, 0, n).view(x_shape).to(x_type),
                         in.narrow(0, n, in.numel() - n).view(side_shape).to(side_type));
        },
        packed);
}

bool has_trainable_parameters(torch::nn::Module& module) {
    for (const auto& m : module.modules(/*include_self=*/true)) {
        LoraAdapter lora{nullptr};
        if (auto* lin = dynamic_cast<LinearImpl*>(m.get())) lora = lin->lora;
        if (auto* conv = dynamic_cast<Conv2dImpl*>(m.get())) lora = conv->lora;
        if (lora && (lora->down.requires_grad() || lora->up.requires_grad())) return true;
        for (const auto& p : m->parameters(/*recurse=*/false))
            if (p.requires_grad()) return true;
    }
    return false;
}

}  // namespace crucible::sd
