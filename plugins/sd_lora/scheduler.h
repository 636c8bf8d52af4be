#pragma once
// The SD 1.x noise schedule (SPECS.md "Stable Diffusion 1.x training"): 1000 steps, betas =
// linspace(sqrt(0.00085), sqrt(0.012))², alphas_cumprod = cumprod(1 - beta); DDPM forward
// noising, epsilon / v-prediction targets, min-SNR weights, and the deterministic DDIM step
// (eta 0, "leading" timestep spacing with steps_offset 1, set_alpha_to_one false).
#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace crucible::sd {

class NoiseSchedule {
  public:
    explicit NoiseSchedule(std::int64_t steps = 1000, double beta_start = 0.00085,
                           double beta_end = 0.012);
    std::int64_t steps() const { return steps_; }
    const torch::Tensor& alphas_cumprod() const { return alphas_cumprod_; }  // [steps] float

    // sqrt(a_t)·x0 + sqrt(1 - a_t)·noise, t [B] integer.
    torch::Tensor add_noise(const torch::Tensor& x0, const torch::Tensor& noise,
                            const torch::Tensor& t) const;
    // v = sqrt(a_t)·noise - sqrt(1 - a_t)·x0
    torch::Tensor velocity(const torch::Tensor& x0, const torch::Tensor& noise,
                           const torch::Tensor& t) const;
    // SNR_t = a_t / (1 - a_t), [B] float.
    torch::Tensor snr(const torch::Tensor& t) const;

    // DDIM inference timesteps, descending: (arange(n)·(steps / n)) reversed + offset.
    std::vector<std::int64_t> ddim_timesteps(std::int64_t inference_steps,
                                             std::int64_t steps_offset = 1) const;
    // One deterministic DDIM step from x_t at `t` given predicted noise `eps`; `prev_t` < 0
    // uses alphas_cumprod[0] (set_alpha_to_one false).
    torch::Tensor ddim_step(const torch::Tensor& eps, std::int64_t t, std::int64_t prev_t,
                            const torch::Tensor& x_t) const;

  private:
    torch::Tensor gather(const torch::Tensor& t, const torch::Tensor& like) const;
    std::int64_t steps_;
    torch::Tensor alphas_cumprod_;
};

}  // namespace crucible::sd
