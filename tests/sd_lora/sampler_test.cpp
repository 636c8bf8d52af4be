// DDIM sampling: an oracle noise predictor (the true noise of a known x0) leads back to x0;
// guidance 1 is the conditional prediction; PNG output.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

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
    EXPECT_TRUE(torch::allclose(guided_unet(*unet, cond, uncond, 1.0)(x, 100), direct, 1e-5, 1e-5));
    const auto u = unet->forward(x, torch::tensor({100}), uncond);
    const auto g = guided_unet(*unet, cond, uncond, 7.5)(x, 100);
    EXPECT_TRUE(torch::allclose(g, u + 7.5 * (direct - u), 1e-4, 1e-4));
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
