// Autocast on the CPU with bf16, the precision the CUDA paths use too: which ops run in bf16,
// which stay fp32, nesting, and the replay of a checkpointed block under the same autocast.
#include "core/engine/autocast.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/engine/activation_checkpoint.h"

namespace crucible::engine {
namespace {

constexpr AutocastMode kCpuBf16{true, c10::DeviceType::CPU, torch::kBFloat16};

TEST(Autocast, CpuBf16RunsProductsInBf16AndKeepsLossesFp32) {
    torch::manual_seed(0);
    const auto x = torch::randn({4, 8}), w = torch::randn({3, 8}), target = torch::randn({4, 3});
    const auto image = torch::randn({1, 2, 6, 6}), kernel = torch::randn({4, 2, 3, 3});
    AutocastGuard autocast(kCpuBf16);
    const auto y = torch::nn::functional::linear(x, w);
    EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
    EXPECT_EQ(torch::matmul(x, w.t()).scalar_type(), torch::kBFloat16);
    EXPECT_EQ(torch::conv2d(image, kernel).scalar_type(), torch::kBFloat16);
    EXPECT_EQ(torch::mse_loss(y, target).scalar_type(), torch::kFloat32);
    EXPECT_EQ(torch::binary_cross_entropy_with_logits(y, target.sigmoid()).scalar_type(),
              torch::kFloat32);
    // Near the fp32 result, within bf16's 8-bit mantissa.
    EXPECT_TRUE(torch::allclose(y.to(torch::kFloat32), torch::matmul(x, w.t()).to(torch::kFloat32),
                                3e-2, 3e-2));
}

// The trainer's rule for its amp options: CUDA takes either precision, the CPU only bf16 and
// only when asked for, so a CPU run keeps fp32 under the defaults (amp on, fp16).
TEST(Autocast, TrainingRunsGetBf16OnTheCpuOnlyWhenAskedFor) {
    const c10::Device cpu(c10::DeviceType::CPU), gpu(c10::DeviceType::CUDA, 1);
    EXPECT_FALSE(training_autocast(true, "fp16", cpu).enabled);
    EXPECT_FALSE(training_autocast(false, "bf16", cpu).enabled);
    const AutocastMode cpu_bf16 = training_autocast(true, "bf16", cpu);
    EXPECT_TRUE(cpu_bf16.enabled);
    EXPECT_EQ(cpu_bf16.device, c10::DeviceType::CPU);
    EXPECT_EQ(cpu_bf16.dtype, torch::kBFloat16);

    const AutocastMode fp16 = training_autocast(true, "fp16", gpu);
    EXPECT_TRUE(fp16.enabled);
    EXPECT_EQ(fp16.device, c10::DeviceType::CUDA);
    EXPECT_EQ(fp16.dtype, torch::kHalf);
    EXPECT_EQ(training_autocast(true, "bf16", gpu).dtype, torch::kBFloat16);
    EXPECT_FALSE(training_autocast(false, "fp16", gpu).enabled);

    EXPECT_STREQ(training_autocast(true, "fp16", cpu).name(), "off");
    EXPECT_STREQ(cpu_bf16.name(), "bf16");
    EXPECT_STREQ(fp16.name(), "fp16");
}

TEST(Autocast, GuardsNestAndRestoreWhatWasThere) {
    EXPECT_FALSE(current_autocast().enabled);
    {
        AutocastGuard outer(kCpuBf16);
        EXPECT_TRUE(current_autocast().enabled);
        EXPECT_EQ(current_autocast().device, c10::DeviceType::CPU);
        EXPECT_EQ(current_autocast().dtype, torch::kBFloat16);
        {
            AutocastGuard inner({true, c10::DeviceType::CPU, torch::kFloat16});
            EXPECT_EQ(current_autocast().dtype, torch::kFloat16);
            AutocastGuard off(AutocastMode{});  // a disabled guard changes nothing
            EXPECT_EQ(current_autocast().dtype, torch::kFloat16);
        }
        EXPECT_EQ(current_autocast().dtype, torch::kBFloat16);
    }
    EXPECT_FALSE(current_autocast().enabled);
    EXPECT_FALSE(cuda_autocast_active());
}

TEST(Autocast, CheckpointedBlockIsReplayedUnderTheSameAutocast) {
    torch::manual_seed(1);
    auto w = torch::randn({5, 5}, torch::requires_grad());
    std::vector<AutocastMode> seen;
    const auto x = torch::randn({2, 5}, torch::requires_grad());
    torch::Tensor y;
    {
        AutocastGuard autocast(kCpuBf16);
        y = checkpointed(
            [&](const torch::Tensor& in) {
                seen.push_back(current_autocast());
                return torch::matmul(in, w);
            },
            x);
        EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
    }
    y.to(torch::kFloat32).sum().backward();  // the replay runs here, outside the guard
    ASSERT_EQ(seen.size(), 2u);
    for (const auto& mode : seen) {
        EXPECT_TRUE(mode.enabled);
        EXPECT_EQ(mode.device, c10::DeviceType::CPU);
        EXPECT_EQ(mode.dtype, torch::kBFloat16);
    }
    EXPECT_EQ(w.grad().scalar_type(), torch::kFloat32);
    EXPECT_TRUE(torch::isfinite(w.grad()).all().item<bool>());
}

}  // namespace
}  // namespace crucible::engine
