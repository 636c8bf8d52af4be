#include "core/engine/ema.h"

#include <cmath>

#include "core/base/error.h"

namespace crucible::engine {

namespace {

std::vector<std::pair<std::string, torch::Tensor>> state_of(torch::nn::Module& m) {
    std::vector<std::pair<std::string, torch::Tensor>> out;
    for (const auto& p : m.named_parameters())
        out.emplace_back(p.key(), p.value());
    for (const auto& b : m.named_buffers())
        out.emplace_back(b.key(), b.value());
    return out;
}

}  // namespace

void copy_module_state(torch::nn::Module& from, torch::nn::Module& to) {
    torch::NoGradGuard no_grad;
    auto src = state_of(from), dst = state_of(to);
    if (src.size() != dst.size()) throw Error("model copy: the two models differ in their tensors");
    for (std::size_t i = 0; i < src.size(); ++i) {
        if (src[i].first != dst[i].first || !src[i].second.sizes().equals(dst[i].second.sizes()))
            throw Error("model copy: tensor '" + src[i].first + "' does not match '" +
                        dst[i].first + "'");
        dst[i].second.copy_(src[i].second);
    }
}

ModelEma::ModelEma(std::shared_ptr<torch::nn::Module> ema, torch::nn::Module& model, double decay,
                   double tau)
    : ema_(std::move(ema)), decay_(decay), tau_(tau) {
    copy_module_state(model, *ema_);
    ema_->eval();
    for (auto& p : ema_->parameters())
        p.set_requires_grad(false);
}

double ModelEma::decay_at(std::int64_t updates) const {
    return decay_ * (1.0 - std::exp(-static_cast<double>(updates) / tau_));
}

void ModelEma::update(torch::nn::Module& model) {
    torch::NoGradGuard no_grad;
    ++updates_;
    const double d = decay_at(updates_);
    auto src = state_of(model), dst = state_of(*ema_);
    for (std::size_t i = 0; i < src.size() && i < dst.size(); ++i) {
        torch::Tensor& e = dst[i].second;
        const torch::Tensor m = src[i].second.detach();
        if (e.is_floating_point()) {
            e.mul_(d);
            e.add_(m, 1.0 - d);
        } else {
            e.copy_(m);
        }
    }
}

}  // namespace crucible::engine
