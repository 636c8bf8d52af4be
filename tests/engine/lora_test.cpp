// The one LoRA adapter both LoRA tasks use (core/engine/lora.h): its start, its arithmetic on a
// Linear and a 1x1 convolution against the plain formula, merging, dropout only in training, the
// two parameter layouts, and the PEFT names.
#include "core/engine/lora.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "core/base/error.h"

namespace crucible::engine {
namespace {

LoraOptions options(std::int64_t rank, double alpha, double dropout = 0) {
    LoraOptions o;
    o.rank = rank;
    o.alpha = alpha;
    o.dropout = dropout;
    return o;
}

// An adapter with a non-zero B, so its delta is not trivially zero.
LoraWeights trained_adapter(std::int64_t in, std::int64_t out, bool conv1x1) {
    torch::manual_seed(1);
    LoraWeights w = LoraWeights::create(in, out, options(3, 6), conv1x1, torch::kCPU);
    torch::NoGradGuard no_grad;
    w.up.normal_(0, 0.3);
    return w;
}

TEST(Lora, StartsKaimingUniformAndZeroOnTheCpuAndLaysOutOnMeta) {
    torch::manual_seed(0);
    const LoraWeights w = LoraWeights::create(16, 8, options(4, 8), false, torch::kCPU);
    EXPECT_EQ(w.down.sizes(), (std::vector<std::int64_t>{4, 16}));
    EXPECT_EQ(w.up.sizes(), (std::vector<std::int64_t>{8, 4}));
    EXPECT_EQ(w.down.scalar_type(), torch::kFloat32);
    EXPECT_LE(w.down.abs().max().item<double>(), 1.0 / std::sqrt(16.0));
    EXPECT_GT(w.down.abs().max().item<double>(), 0.5 / std::sqrt(16.0));
    EXPECT_EQ(w.up.abs().sum().item<double>(), 0.0);
    EXPECT_DOUBLE_EQ(w.scale, 2.0);

    const LoraWeights conv = LoraWeights::create(16, 8, options(4, 8), true, torch::kMeta);
    EXPECT_TRUE(conv.down.is_meta());
    EXPECT_EQ(conv.down.sizes(), (std::vector<std::int64_t>{4, 16, 1, 1}));
    EXPECT_EQ(conv.up.sizes(), (std::vector<std::int64_t>{8, 4, 1, 1}));
}

TEST(Lora, ScaleFollowsAlphaAndRsLora) {
    LoraWeights w = LoraWeights::create(4, 4, options(4, 8), false, torch::kCPU);
    w.set_alpha(2, /*rslora=*/false);
    EXPECT_DOUBLE_EQ(w.scale, 0.5);
    w.set_alpha(2, /*rslora=*/true);
    EXPECT_DOUBLE_EQ(w.scale, 1.0);
}

TEST(Lora, LinearAddsScaleTimesBAOfTheInput) {
    const LoraWeights w = trained_adapter(10, 7, false);
    const auto x = torch::randn({2, 5, 10}), weight = torch::randn({7, 10}), bias = torch::randn(7);
    const auto y = torch::linear(x, weight, bias);
    const auto expected = y + w.scale * torch::matmul(torch::matmul(x, w.down.t()), w.up.t());
    EXPECT_TRUE(torch::allclose(w.add_to_linear(y, x, /*training=*/true), expected, 1e-5, 1e-5));
    // Folding the adapter into the weight gives the same layer.
    const auto merged = torch::linear(x, w.merged(weight), bias);
    EXPECT_TRUE(torch::allclose(merged, expected, 1e-5, 1e-5));
}

TEST(Lora, Conv1x1AddsScaleTimesBAOfEachPixel) {
    const LoraWeights w = trained_adapter(6, 5, true);
    const auto x = torch::randn({2, 6, 4, 3}), weight = torch::randn({5, 6, 1, 1});
    const auto y = torch::conv2d(x, weight);
    const auto expected =
        y + w.scale * torch::conv2d(torch::conv2d(x, w.down), w.up);  // per pixel: B·A·x
    EXPECT_TRUE(torch::allclose(w.add_to_conv1x1(y, x, false), expected, 1e-5, 1e-5));
    EXPECT_EQ(w.delta().sizes(), weight.sizes());
    EXPECT_TRUE(torch::allclose(torch::conv2d(x, w.merged(weight)), expected, 1e-5, 1e-5));
}

TEST(Lora, LowPrecisionBaseKeepsTheAdapterInFp32) {
    const LoraWeights w = trained_adapter(8, 4, false);
    const auto x = torch::randn({3, 8}).to(torch::kBFloat16);
    const auto weight = torch::randn({4, 8}).to(torch::kBFloat16);
    const auto y = torch::linear(x, weight);
    const auto out = w.add_to_linear(y, x, false);
    EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
    const auto delta =
        w.scale * torch::matmul(torch::matmul(x.to(torch::kFloat32), w.down.t()), w.up.t());
    EXPECT_TRUE(
        torch::allclose(out.to(torch::kFloat32), y.to(torch::kFloat32) + delta, 2e-2, 2e-2));
    EXPECT_EQ(w.merged(weight).scalar_type(), torch::kBFloat16);
}

TEST(Lora, DropoutOnlyInTraining) {
    torch::manual_seed(2);
    LoraWeights w = LoraWeights::create(32, 16, options(4, 4, 0.5), false, torch::kCPU);
    {
        torch::NoGradGuard no_grad;
        w.up.normal_();
    }
    const auto x = torch::randn({8, 32}), y = torch::zeros({8, 16});
    const auto eval_a = w.add_to_linear(y, x, false), eval_b = w.add_to_linear(y, x, false);
    EXPECT_TRUE(torch::equal(eval_a, eval_b));
    EXPECT_FALSE(torch::allclose(w.add_to_linear(y, x, true), eval_a));
}

struct Owner : torch::nn::Module {};

TEST(Lora, LayoutsNameTheMatricesAsTheirFilesDoAndFollowTheOwner) {
    Owner peft, network;
    LoraWeights a = LoraWeights::create(4, 3, options(2, 2), false, torch::kCPU);
    LoraWeights b = LoraWeights::create(4, 3, options(2, 2), false, torch::kCPU);
    register_lora(peft, a, LoraLayout::Peft);
    register_lora(network, b, LoraLayout::Network);
    const auto peft_names = peft.named_parameters().keys();
    const auto network_names = network.named_parameters().keys();
    EXPECT_EQ(peft_names, (std::vector<std::string>{"lora_A.weight", "lora_B.weight"}));
    EXPECT_EQ(network_names, (std::vector<std::string>{"down", "up"}));
    // The adapter's tensors are the registered parameters: converting the owner converts them.
    peft.to(torch::kFloat64);
    network.to(torch::kFloat64);
    EXPECT_EQ(a.down.scalar_type(), torch::kFloat64);
    EXPECT_EQ(b.up.scalar_type(), torch::kFloat64);
    unregister_lora(peft);
    EXPECT_TRUE(peft.named_parameters().is_empty());
}

TEST(Lora, PeftNamesAndTensors) {
    EXPECT_EQ(peft_lora_tensor_name("model.layers.0.self_attn.q_proj", 'A'),
              "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight");
    const LoraWeights w = trained_adapter(4, 3, false);
    const auto tensors = peft_lora_tensors({{"x.fc1", &w}});
    ASSERT_EQ(tensors.size(), 2u);
    EXPECT_TRUE(torch::equal(tensors.at("base_model.model.x.fc1.lora_B.weight"), w.up));
    EXPECT_THROW(save_peft_lora("unused", {}, Json::object()), Error);
}

}  // namespace
}  // namespace crucible::engine
