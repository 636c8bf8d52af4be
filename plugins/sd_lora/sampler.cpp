#include "plugins/sd_lora/sampler.h"

#include <torch/torch.h>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>
#include <utility>

#include "core/base/error.h"
#include "core/data/image_io.h"
#include "plugins/sd_lora/unet.h"
#include "plugins/sd_lora/vae.h"

namespace crucible::sd {

torch::Tensor ddim_sample(const NoiseSchedule& schedule, const NoisePredictor& predict,
                          const torch::Tensor& noise, std::int64_t steps) {
    const auto timesteps = schedule.ddim_timesteps(steps, 1);
    const std::int64_t stride = schedule.steps() / steps;
    torch::NoGradGuard no_grad;
    torch::Tensor x = noise;
    for (const std::int64_t t : timesteps) {
        const torch::Tensor eps = predict(x, t);
        x = schedule.ddim_step(eps, t, t - stride, x);
    }
    return x;
}

std::vector<double> euler_sigmas(const NoiseSchedule& schedule, std::int64_t steps) {
    const torch::Tensor ac = schedule.alphas_cumprod().to(torch::kCPU, torch::kFloat64);
    std::vector<double> out;
    for (const std::int64_t t : schedule.ddim_timesteps(steps, 1)) {
        const double a = ac[t].item<double>();
        out.push_back(std::sqrt((1.0 - a) / a));
    }
    out.push_back(0.0);
    return out;
}

torch::Tensor euler_sample(const NoiseSchedule& schedule, const NoisePredictor& predict,
                           const torch::Tensor& noise, std::int64_t steps) {
    const auto timesteps = schedule.ddim_timesteps(steps, 1);
    const std::vector<double> sigma = euler_sigmas(schedule, steps);
    torch::NoGradGuard no_grad;
    torch::Tensor x = noise * std::sqrt(sigma[0] * sigma[0] + 1.0);
    for (std::size_t i = 0; i < timesteps.size(); ++i) {
        const torch::Tensor eps = predict(x / std::sqrt(sigma[i] * sigma[i] + 1.0), timesteps[i]);
        x = x + (sigma[i + 1] - sigma[i]) * eps;
    }
    return x;
}

SamplerKind sampler_kind(const std::string& name) {
    if (name == "ddim") return SamplerKind::Ddim;
    if (name == "euler") return SamplerKind::Euler;
    throw InputError("sample_sampler", "'" + name + "' is not ddim or euler");
}

torch::Tensor sample_latents(SamplerKind kind, const NoiseSchedule& schedule,
                             const NoisePredictor& predict, const torch::Tensor& noise,
                             std::int64_t steps) {
    return kind == SamplerKind::Euler ? euler_sample(schedule, predict, noise, steps)
                                      : ddim_sample(schedule, predict, noise, steps);
}

NoisePredictor epsilon_from_velocity(const NoiseSchedule& schedule, NoisePredictor predict_v) {
    const torch::Tensor ac = schedule.alphas_cumprod().to(torch::kCPU, torch::kFloat64);
    return [ac, predict_v = std::move(predict_v)](const torch::Tensor& x, std::int64_t t) {
        const double a = ac[t].item<double>();
        return std::sqrt(a) * predict_v(x, t) + std::sqrt(1.0 - a) * x;
    };
}

NoisePredictor guided_unet(UNetImpl& unet, const TextConditioning& cond,
                           const TextConditioning& uncond, const torch::Tensor& time_ids,
                           double guidance) {
    return [&unet, cond, uncond, time_ids, guidance](const torch::Tensor& x, std::int64_t t) {
        const auto b = x.size(0);
        if (guidance == 1.0)
            return unet.forward(x, torch::full({b}, t, torch::kLong), cond.context, cond.pooled,
                                time_ids);
        // Unconditional and conditional rows in one forward; the time ids are the same for both.
        auto both_of = [](const torch::Tensor& u, const torch::Tensor& c) {
            return u.defined() ? torch::cat({u, c}) : torch::Tensor();
        };
        const torch::Tensor both =
            unet.forward(torch::cat({x, x}), torch::full({2 * b}, t, torch::kLong),
                         both_of(uncond.context, cond.context), both_of(uncond.pooled, cond.pooled),
                         both_of(time_ids, time_ids));
        const auto parts = both.chunk(2);
        return parts[0] + guidance * (parts[1] - parts[0]);
    };
}

torch::Tensor decode_to_rgb8(AutoencoderKLImpl& vae, const torch::Tensor& latents) {
    torch::NoGradGuard no_grad;
    const torch::Tensor img = vae.decode(latents).to(torch::kFloat32);
    return ((img.clamp(-1, 1) + 1) * 127.5)
        .round()
        .to(torch::kUInt8)
        .permute({0, 2, 3, 1})
        .contiguous()
        .to(torch::kCPU);
}

void write_rgb8_png(const std::filesystem::path& path, const torch::Tensor& rgb) {
    const torch::Tensor t = rgb.to(torch::kCPU).to(torch::kUInt8).contiguous();
    if (t.dim() != 3 || t.size(2) != 3) throw Error("write_rgb8_png needs [H, W, 3] uint8");
    cv::Mat view(static_cast<int>(t.size(0)), static_cast<int>(t.size(1)), CV_8UC3, t.data_ptr());
    cv::Mat bgr;
    cv::cvtColor(view, bgr, cv::COLOR_RGB2BGR);
    data::write_image(path, bgr);
}

}  // namespace crucible::sd
