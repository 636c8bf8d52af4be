// The fused attention of the UNet, the VAE and the CLIP text encoder against the plain formula
// softmax(q k^T / sqrt(d) + mask) v in fp64: without a mask (UNet self- and cross-attention),
// with CLIP's causal fp32 mask, with bf16 queries beside that fp32 mask (autocast), and under
// CPU bf16 autocast through the text encoder's own layer.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

#include "core/engine/autocast.h"
#include "plugins/sd_lora/clip_text.h"
#include "plugins/sd_lora/nn.h"

namespace crucible::sd {
namespace {

torch::Tensor plain_attention(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v, const torch::Tensor& mask = {}) {
    const auto q64 = q.to(torch::kFloat64), k64 = k.to(torch::kFloat64),
               v64 = v.to(torch::kFloat64);
    auto scores = torch::matmul(q64, k64.transpose(-1, -2)) / std::sqrt(double(q.size(-1)));
    if (mask.defined()) scores = scores + mask.to(torch::kFloat64);
    return torch::matmul(torch::softmax(scores, -1), v64);
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
    return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

torch::Tensor causal_mask(std::int64_t t) {
    return torch::full({t, t}, -std::numeric_limits<float>::infinity()).triu(1);
}

TEST(SdAttention, FusedEqualsThePlainFormulaWithoutMask) {
    torch::manual_seed(0);
    // Self-attention over a 32x32 latent (1024 tokens) and cross-attention to 77 text tokens.
    const auto q = torch::randn({2, 4, 1024, 16}), k = torch::randn({2, 4, 1024, 16});
    const auto v = torch::randn({2, 4, 1024, 16});
    EXPECT_LT(max_diff(attention(q, k, v), plain_attention(q, k, v)), 1e-5);
    const auto kc = torch::randn({2, 4, 77, 16}), vc = torch::randn({2, 4, 77, 16});
    EXPECT_LT(max_diff(attention(q, kc, vc), plain_attention(q, kc, vc)), 1e-5);
}

TEST(SdAttention, FusedEqualsThePlainFormulaWithCausalMask) {
    torch::manual_seed(1);
    const auto q = torch::randn({2, 8, 77, 8}), k = torch::randn({2, 8, 77, 8});
    const auto v = torch::randn({2, 8, 77, 8});
    const auto mask = causal_mask(77);
    const auto want = plain_attention(q, k, v, mask);
    EXPECT_LT(max_diff(attention(q, k, v, mask), want), 1e-5);
    // bf16 queries, keys and values (what autocast hands over) with the fp32 mask: same kernel,
    // within bf16 rounding, and position 0 still sees only itself.
    const auto qb = q.to(torch::kBFloat16), kb = k.to(torch::kBFloat16);
    const auto vb = v.to(torch::kBFloat16);
    const auto low = attention(qb, kb, vb, mask);
    EXPECT_EQ(low.scalar_type(), torch::kBFloat16);
    EXPECT_LT(max_diff(low, plain_attention(qb, kb, vb, mask)), 3e-2);
    EXPECT_LT(max_diff(low.select(2, 0), vb.select(2, 0)), 1e-2);
}

TEST(SdAttention, ClipLayerUnderBf16AutocastStaysNearFp32) {
    torch::manual_seed(2);
    ClipLayer layer(ClipTextConfig::tiny());
    layer->eval();
    torch::NoGradGuard no_grad;
    const auto x = torch::randn({2, 77, ClipTextConfig::tiny().hidden_size});
    const auto mask = causal_mask(77);
    const auto fp32 = layer->forward(x, mask);
    torch::Tensor low;
    {
        engine::AutocastGuard autocast({true, c10::DeviceType::CPU, torch::kBFloat16});
        low = layer->forward(x, mask);
    }
    EXPECT_TRUE(torch::isfinite(low).all().item<bool>());
    EXPECT_LT(max_diff(low, fp32), 5e-2 * fp32.abs().max().item<double>());
}

}  // namespace
}  // namespace crucible::sd
