// DDIM and Euler sampling: an oracle noise predictor (the true noise of a known x0) leads back to
// x0; guidance 1 is the conditional prediction; v-prediction models as noise predictors; PNG
// output.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "core/base/error.h"
#include "core/data/image_io.h"
#include "plugins/sd_lora/sampler.h"
#include "plugins/sd_lora/unet.h"
#include "plugins/sd_lora/vae.h"
#include "tests/sd_lora/sd_test_util.h"

namespace crucible::sd {
namespace {

TEST(Sampler, OracleNoiseRecoversX0) {
    NoiseSchedule s;
    torch::manual_seed(9);
    const auto x0 = torch::rand({2, 4, 8, 8}) * 2 - 1;
    const auto z = torch::randn({2, 4, 8, 8});
    int calls = 0;
    const NoisePredictor oracle = [&](const torch::Tensor& x, std::int64_t t) {
        ++calls;
        const double a = s.alphas_cumprod()[t].item<double>();
        return (x - std::sqrt(a) * x0) / std::sqrt(1 - a);
    };
    const auto out = ddim_sample(s, oracle, z, 25);
    EXPECT_EQ(calls, 25);
    // Every step predicts x0 exactly, so the result is x0 at the noise level of alphas_cumprod[0]
    // with the noise the first step saw.
    const double a_first = s.alphas_cumprod()[s.ddim_timesteps(25)[0]].item<double>();
    const auto eps = (z - std::sqrt(a_first) * x0) / std::sqrt(1 - a_first);
    const double a0 = s.alphas_cumprod()[0].item<double>();
    const auto want = std::sqrt(a0) * x0 + std::sqrt(1 - a0) * eps;
    EXPECT_LT((out - want).abs().max().item<double>(), 1e-4);
    EXPECT_LT((out - x0).abs().mean().item<double>(), 0.05);
    // A wrong predictor does not.
    const NoisePredictor zero = [](const torch::Tensor& x, std::int64_t) {
        return torch::zeros_like(x);
    };
    EXPECT_GT((ddim_sample(s, zero, z, 25) - x0).abs().mean().item<double>(), 0.3);
}

TEST(Sampler, GuidanceOneIsTheConditionalPrediction) {
    torch::manual_seed(3);
    UNet unet(UNetConfig::tiny());
    unet->eval();
    torch::NoGradGuard no_grad;
    const auto cond = torch::randn({1, 77, 32});
    const auto uncond = torch::randn({1, 77, 32});
    const auto x = torch::randn({1, 4, 8, 8});
    const auto direct = unet->forward(x, torch::tensor({100}), cond);
    EXPECT_TRUE(
        torch::allclose(guided_unet(*unet, {cond}, {uncond}, {}, 1.0)(x, 100), direct, 1e-5, 1e-5));
    const auto u = unet->forward(x, torch::tensor({100}), uncond);
    const auto g = guided_unet(*unet, {cond}, {uncond}, {}, 7.5)(x, 100);
    EXPECT_TRUE(torch::allclose(g, u + 7.5 * (direct - u), 1e-4, 1e-4));
}

TEST(Sampler, EulerWithOracleNoiseRecoversX0) {
    NoiseSchedule s;
    torch::manual_seed(9);
    const auto x0 = torch::rand({2, 4, 8, 8}) * 2 - 1;
    const auto z = torch::randn({2, 4, 8, 8});
    std::vector<std::int64_t> seen;
    const NoisePredictor oracle = [&](const torch::Tensor& x, std::int64_t t) {
        seen.push_back(t);
        const double a = s.alphas_cumprod()[t].item<double>();
        return (x - std::sqrt(a) * x0) / std::sqrt(1 - a);
    };
    const auto out = euler_sample(s, oracle, z, 25);
    // The DDIM timesteps ("leading", steps_offset 1): 961, 921, ..., 1.
    EXPECT_EQ(seen, s.ddim_timesteps(25));
    // sigma_t = sqrt((1 - a_t) / a_t), descending, then 0.
    const auto sigmas = euler_sigmas(s, 25);
    ASSERT_EQ(sigmas.size(), 26u);
    const double a961 = s.alphas_cumprod()[961].item<double>();
    EXPECT_NEAR(sigmas[0], std::sqrt((1 - a961) / a961), 1e-9);
    for (std::size_t i = 1; i < sigmas.size(); ++i)
        EXPECT_LT(sigmas[i], sigmas[i - 1]) << i;
    EXPECT_EQ(sigmas.back(), 0.0);
    // In exact arithmetic every Euler step keeps x = x0 + sigma_i·eps with the same eps (the
    // oracle's eps is (x - x0) / sigma), so the last step, to sigma 0, lands on x0 itself, not at
    // alphas_cumprod[0]'s noise level as DDIM does. Rounding does not build up either: an error d
    // in x_i enters the oracle's eps as d / sigma_i and leaves x_{i+1} with d · sigma_{i+1} /
    // sigma_i, so the step to sigma 0 removes every earlier error, and what remains is the
    // float32 rounding of that last step on values of |x0| + sigma_last·|eps| ~ 1.2 (ulp 1.2e-7).
    // 1e-6 is a few of those ulps with margin; the measured maximum is 6e-8.
    EXPECT_LT((out - x0).abs().max().item<double>(), 1e-6);
    const NoisePredictor zero = [](const torch::Tensor& x, std::int64_t) {
        return torch::zeros_like(x);
    };
    EXPECT_GT((euler_sample(s, zero, z, 25) - x0).abs().mean().item<double>(), 0.3);
}

TEST(Sampler, EulerGuidanceOneIsTheConditionalPrediction) {
    torch::manual_seed(4);
    UNet unet(UNetConfig::tiny());
    unet->eval();
    const auto cond = torch::randn({1, 77, 32});
    const auto uncond = torch::randn({1, 77, 32});
    const auto noise = torch::randn({1, 4, 8, 8});
    NoiseSchedule s;
    const NoisePredictor conditional = [&](const torch::Tensor& x, std::int64_t t) {
        return unet->forward(x, torch::tensor({t}), cond);
    };
    const auto plain = euler_sample(s, conditional, noise, 4);
    const auto guided1 = euler_sample(s, guided_unet(*unet, {cond}, {uncond}, {}, 1.0), noise, 4);
    EXPECT_TRUE(torch::allclose(guided1, plain, 1e-5, 1e-5));
    const auto guided = euler_sample(s, guided_unet(*unet, {cond}, {uncond}, {}, 7.5), noise, 4);
    EXPECT_GT((guided - plain).abs().max().item<double>(), 1e-2);
    // sample_latents picks the sampler by name.
    EXPECT_TRUE(
        torch::equal(sample_latents(sampler_kind("euler"), s, conditional, noise, 4), plain));
    EXPECT_TRUE(torch::equal(sample_latents(sampler_kind("ddim"), s, conditional, noise, 4),
                             ddim_sample(s, conditional, noise, 4)));
    EXPECT_THROW(sampler_kind("dpm++"), InputError);
}

TEST(Sampler, VelocityModelsPredictTheNoise) {
    NoiseSchedule s;
    torch::manual_seed(5);
    const auto x0 = torch::randn({1, 4, 8, 8});
    const auto eps = torch::randn({1, 4, 8, 8});
    const std::int64_t t = 600;
    const auto x_t = s.add_noise(x0, eps, torch::tensor({t}));
    const NoisePredictor v_oracle = [&](const torch::Tensor&, std::int64_t step) {
        return s.velocity(x0, eps, torch::tensor({step}));
    };
    const auto got = epsilon_from_velocity(s, v_oracle)(x_t, t);
    EXPECT_LT((got - eps).abs().max().item<double>(), 1e-5);
}

TEST(Sampler, DecodesAndWritesPng) {
    torch::manual_seed(1);
    AutoencoderKL vae(VaeConfig::tiny());
    vae->eval();
    const auto rgb = decode_to_rgb8(*vae, torch::randn({1, 4, 8, 8}));
    ASSERT_EQ(rgb.sizes(), (std::vector<std::int64_t>{1, 16, 16, 3}));
    EXPECT_EQ(rgb.scalar_type(), torch::kUInt8);
    const auto dir = testing::fresh_dir("png");
    write_rgb8_png(dir / "样本.png", rgb[0]);
    const cv::Mat back = data::read_image(dir / "样本.png");
    ASSERT_EQ(back.cols, 16);
    EXPECT_EQ(back.at<cv::Vec3b>(3, 5)[0], rgb[0][3][5][2].item<std::uint8_t>());  // BGR vs RGB
}

}  // namespace
}  // namespace crucible::sd
