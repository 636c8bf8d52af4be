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
    return engine::checkpointed(
        [block](const std::vector<torch::Tensor>& in) { return block(in[0], in[1]); }, {x, side});
}

bool has_trainable_parameters(torch::nn::Module& module) {
    for (const auto& m : module.modules(/*include_self=*/true)) {
        LoraAdapter lora{nullptr};
        if (auto* lin = dynamic_cast<LinearImpl*>(m.get())) lora = lin->lora;
        if (auto* conv = dynamic_cast<Conv2dImpl*>(m.get())) lora = conv->lora;
        if (lora && (lora->weights.down.requires_grad() || lora->weights.up.requires_grad()))
            return true;
        for (const auto& p : m->parameters(/*recurse=*/false))
            if (p.requires_grad()) return true;
    }
    return false;
}

}  // namespace crucible::sd
