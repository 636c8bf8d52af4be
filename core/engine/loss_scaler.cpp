#include "core/engine/loss_scaler.h"

#include "core/engine/host_read.h"

namespace crucible::engine {

DynamicLossScaler::DynamicLossScaler(bool enabled, double initial_scale, double growth,
                                     double backoff, int growth_interval)
    : enabled_(enabled),
      scale_(initial_scale),
      growth_(growth),
      backoff_(backoff),
      growth_interval_(growth_interval) {}

torch::Tensor DynamicLossScaler::scale_loss(const torch::Tensor& loss) const {
    return enabled_ ? loss * scale_ : loss;
}

bool DynamicLossScaler::unscale(const std::vector<torch::Tensor>& params) {
    if (!enabled_) return true;
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> grads;
    for (const auto& p : params)
        if (p.grad().defined()) grads.push_back(p.grad());
    if (grads.empty()) return true;
    const auto on = torch::TensorOptions().dtype(torch::kFloat32).device(grads.front().device());
    torch::Tensor found_inf = torch::zeros({1}, on);
    const torch::Tensor inv_scale = torch::full({1}, 1.0 / scale_, on);
    // Multiplies every gradient by inv_scale and sets found_inf where one is inf or NaN; the
    // kernel wants all tensors on one device, which the trainer's parameters are.
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
    return !host_bool(found_inf.gt(0));
}

void DynamicLossScaler::update(bool found_inf) {
    if (!enabled_) return;
    if (found_inf) {
        scale_ *= backoff_;
        good_steps_ = 0;
        return;
    }
    if (++good_steps_ >= growth_interval_) {
        scale_ *= growth_;
        good_steps_ = 0;
    }
}

Json DynamicLossScaler::state() const {
    return {{"enabled", enabled_}, {"scale", scale_}, {"good_steps", good_steps_}};
}

void DynamicLossScaler::load_state(const Json& s) {
    if (!s.is_object()) return;
    scale_ = s.value("scale", scale_);
    good_steps_ = s.value("good_steps", 0);
}

}  // namespace crucible::engine
