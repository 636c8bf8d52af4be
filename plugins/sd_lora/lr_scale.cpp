#include "plugins/sd_lora/lr_scale.h"

#include <torch/torch.h>

#include <algorithm>

namespace crucible::sd {

LrScaleImpl::LrScaleImpl(const std::vector<Entry>& entries) {
    torch::NoGradGuard no_grad;
    for (const auto& e : entries) {
        std::string name = e.name;
        std::replace(name.begin(), name.end(), '.', '_');
        params_.push_back(e.param);
        before_.push_back(register_buffer(name, e.param.detach().clone()));
        ratios_.push_back(e.ratio);
    }
    pending_ = register_buffer("pending", torch::zeros({}, torch::kFloat32));
}

void LrScaleImpl::settle() {
    torch::NoGradGuard no_grad;
    if (pending_.item<float>() == 0.0f) return;
    for (std::size_t i = 0; i < params_.size(); ++i) {
        // before + r·(p − before); p == before (no step since begin_step) stays exactly as it is.
        const torch::Tensor change = params_[i] - before_[i];
        params_[i].copy_(before_[i] + ratios_[i] * change);
    }
    pending_.fill_(0);
}

void LrScaleImpl::begin_step() {
    settle();
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < params_.size(); ++i)
        before_[i].copy_(params_[i]);
    pending_.fill_(1);
}

}  // namespace crucible::sd
