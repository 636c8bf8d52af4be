#include "plugins/sd_lora/scheduler.h"

#include <torch/torch.h>

#include <cmath>

#include "core/base/error.h"

namespace crucible::sd {

NoiseSchedule::NoiseSchedule(std::int64_t steps, double beta_start, double beta_end)
    : steps_(steps) {
    if (steps < 2) throw InputError("train_timesteps", "needs at least 2 steps");
    const torch::Tensor betas =
        torch::linspace(std::sqrt(beta_start), std::sqrt(beta_end), steps, torch::kFloat32).pow(2);
    alphas_cumprod_ = torch::cumprod(1.0 - betas, 0);
}

torch::Tensor NoiseSchedule::gather(const torch::Tensor& t, const torch::Tensor& like) const {
    torch::Tensor a = alphas_cumprod_.to(like.device())
                          .index_select(0, t.to(like.device()).to(torch::kLong).reshape({-1}));
    std::vector<std::int64_t> shape(static_cast<std::size_t>(like.dim()), 1);
    shape[0] = a.size(0);
    return a.reshape(shape).to(like.dtype());
}

torch::Tensor NoiseSchedule::add_noise(const torch::Tensor& x0, const torch::Tensor& noise,
                                       const torch::Tensor& t) const {
    const torch::Tensor a = gather(t, x0);
    return torch::sqrt(a) * x0 + torch::sqrt(1.0 - a) * noise;
}

torch::Tensor NoiseSchedule::velocity(const torch::Tensor& x0, const torch::Tensor& noise,
                                      const torch::Tensor& t) const {
    const torch::Tensor a = gather(t, x0);
    return torch::sqrt(a) * noise - torch::sqrt(1.0 - a) * x0;
}

torch::Tensor NoiseSchedule::snr(const torch::Tensor& t) const {
    const torch::Tensor a =
        alphas_cumprod_.index_select(0, t.to(torch::kCPU).to(torch::kLong).reshape({-1}));
    return (a / (1.0 - a)).to(t.device());
}

std::vector<std::int64_t> NoiseSchedule::ddim_timesteps(std::int64_t n,
                                                        std::int64_t steps_offset) const {
    if (n < 1 || n > steps_)
        throw InputError("sample_steps", "must be between 1 and " + std::to_string(steps_));
    const std::int64_t ratio = steps_ / n;
    std::vector<std::int64_t> out;
    for (std::int64_t i = n - 1; i >= 0; --i)
        out.push_back(i * ratio + steps_offset);
    return out;
}

torch::Tensor NoiseSchedule::ddim_step(const torch::Tensor& eps, std::int64_t t,
                                       std::int64_t prev_t, const torch::Tensor& x_t) const {
    const double a_t = alphas_cumprod_[t].item<double>();
    const double a_prev =
        prev_t >= 0 ? alphas_cumprod_[prev_t].item<double>() : alphas_cumprod_[0].item<double>();
    const torch::Tensor x0 = (x_t - std::sqrt(1.0 - a_t) * eps) / std::sqrt(a_t);
    return std::sqrt(a_prev) * x0 + std::sqrt(1.0 - a_prev) * eps;
}

}  // namespace crucible::sd
