#include "plugins/sd_lora/sampler.h"

#include <torch/torch.h>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

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

NoisePredictor guided_unet(UNetImpl& unet, const torch::Tensor& cond, const torch::Tensor& uncond,
                           double guidance) {
    return [&unet, cond, uncond, guidance](const torch::Tensor& x, std::int64_t t) {
        const auto b = x.size(0);
        if (guidance == 1.0) {
            return unet.forward(x, torch::full({b}, t, torch::kLong), cond);
        }
        const torch::Tensor both = unet.forward(
            torch::cat({x, x}), torch::full({2 * b}, t, torch::kLong), torch::cat({uncond, cond}));
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
