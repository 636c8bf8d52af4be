#include "core/engine/loss_scaler.h"

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
    bool finite = true;
    const double inv = 1.0 / scale_;
    for (const auto& p : params) {
        torch::Tensor g = p.grad();
        if (!g.defined()) continue;
        g.mul_(inv);
        if (finite && !torch::isfinite(g).all().item<bool>()) finite = false;
    }
    return finite;
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
