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
        // before + r·(p − before), which is then also the next step's starting value; p == before
        // (no step since begin_step) stays exactly as it is.
        before_[i].lerp_(params_[i], ratios_[i]);
        params_[i].copy_(before_[i]);
    }
    pending_.fill_(0);
}

void LrScaleImpl::begin_step() {
    // Settled (or never stepped), the remembered values are the parameters' own.
    settle();
    pending_.fill_(1);
}

}  // namespace crucible::sd
