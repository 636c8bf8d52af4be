// The rotary op against the Hugging Face formula x * cos + rotate_half(x) * sin: values and
// gradients, fp32 and bf16, and its checks on shapes.
#include "plugins/llm_lora/rotary.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/base/error.h"

namespace crucible::llm {
namespace {

torch::Tensor rotate_half(const torch::Tensor& x) {
    const auto half = x.size(-1) / 2;
    return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

// x [B, T, H, D]; cos, sin [T, D/2] as the model makes them.
torch::Tensor hf_rotary(const torch::Tensor& x, const torch::Tensor& cos,
                        const torch::Tensor& sin) {
    const auto c = torch::cat({cos, cos}, -1).unsqueeze(1),
               s = torch::cat({sin, sin}, -1).unsqueeze(1);
    return x * c + rotate_half(x) * s;
}

struct Tables {
    torch::Tensor cos, sin;
};

Tables tables(std::int64_t time, std::int64_t dim, std::int64_t past = 0) {
    const auto inv = 1.0 / torch::pow(10000.0, torch::arange(0, dim, 2, torch::kFloat32) / dim);
    const auto freqs = torch::outer(torch::arange(past, past + time, torch::kFloat32), inv);
    return {freqs.cos(), freqs.sin()};
}

TEST(Rotary, ValuesAndGradientsEqualTheHuggingFaceFormula) {
    torch::manual_seed(2);
    const auto t = tables(7, 8, /*past=*/3);
    const auto x = torch::randn({2, 7, 3, 8});
    // The gradient arrives as the model hands it back: a transposed view, not contiguous.
    const auto upstream = torch::randn({2, 3, 7, 8}).transpose(1, 2);
    ASSERT_FALSE(upstream.is_contiguous());

    const auto a = x.clone().requires_grad_(true);
    const auto want = hf_rotary(a, t.cos, t.sin);
    want.backward(upstream);
    const auto b = x.clone().requires_grad_(true);
    const auto got = apply_rotary(b, t.cos, t.sin);
    got.backward(upstream);

    EXPECT_LE((got - want).abs().max().item<double>(), 1e-6);
    EXPECT_LE((b.grad() - a.grad()).abs().max().item<double>(), 1e-6);
    EXPECT_GT(b.grad().abs().max().item<double>(), 0.1);
    // A rotation keeps each pair's length.
    EXPECT_TRUE(torch::allclose(got.pow(2).sum(-1), x.pow(2).sum(-1), 1e-5, 1e-5));
}

TEST(Rotary, AcceptsAViewAndKeepsBf16) {
    torch::manual_seed(4);
    const auto t = tables(5, 6);
    // A slice of a wider projection, as a fused one would hand over: not contiguous.
    const auto wide = torch::randn({1, 5, 2, 12});
    const auto x = wide.narrow(-1, 0, 6);
    EXPECT_TRUE(
        torch::allclose(apply_rotary(x, t.cos, t.sin), hf_rotary(x, t.cos, t.sin), 1e-6, 1e-6));
    const auto xb = x.to(torch::kBFloat16);
    const auto got = apply_rotary(xb, t.cos.to(torch::kBFloat16), t.sin.to(torch::kBFloat16));
    EXPECT_EQ(got.scalar_type(), torch::kBFloat16);
    EXPECT_TRUE(torch::allclose(got.to(torch::kFloat32), hf_rotary(x, t.cos, t.sin), 3e-2, 3e-2));
}

TEST(Rotary, RejectsShapesThatDoNotPair) {
    const auto t = tables(4, 8);
    EXPECT_THROW(apply_rotary(torch::randn({1, 4, 2, 7}), t.cos, t.sin), Error);  // odd D
    EXPECT_THROW(apply_rotary(torch::randn({1, 5, 2, 8}), t.cos, t.sin), Error);  // T differs
    EXPECT_THROW(apply_rotary(torch::randn({4, 2, 8}), t.cos, t.sin), Error);     // not 4-d
    EXPECT_THROW(apply_rotary(torch::randn({1, 4, 2, 8}), t.cos, t.sin.narrow(1, 0, 3)), Error);
}

}  // namespace
}  // namespace crucible::llm
