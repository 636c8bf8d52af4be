#include "core/engine/grad_clip.h"

namespace crucible::engine {

torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> grads;
    for (const auto& p : params)
        if (p.grad().defined()) grads.push_back(p.grad());
    if (grads.empty()) return torch::zeros({});
    std::vector<torch::Tensor> norms;
    norms.reserve(grads.size());
    for (const auto& g : grads)
        norms.push_back(g.norm(2));
    const torch::Tensor total = norms.size() == 1 ? norms[0] : torch::stack(norms).norm(2);
    // Multiplying by exactly 1 when nothing is clipped leaves the gradients bit-identical.
    const torch::Tensor scale = torch::clamp(max_norm / (total + 1e-6), std::nullopt, 1.0);
    for (auto& g : grads)
        g.mul_(scale);
    return total;
}

}  // namespace crucible::engine
