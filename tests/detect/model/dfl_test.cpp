// dfl_expectation (plugins/detect/model/yolo_head.h) through its fused CPU kernels
// (dfl_simd.h) against the plain formula, softmax over each side's 16 bins times the bin values:
// values and gradients, for dense logits, for the box part of a wider [B, A, 4 * 16 + nc] tensor
// read in place, for a layout the kernels cannot read in place, and for logits large enough that
// an exp without the max subtracted would overflow.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "plugins/detect/model/dfl_simd.h"
#include "plugins/detect/model/yolo_head.h"

using namespace crucible::detect;

namespace {

torch::Tensor plain_expectation(const torch::Tensor& logits) {
    auto sizes = logits.sizes().vec();
    sizes.back() = 4;
    sizes.push_back(16);
    const auto probs = logits.reshape(sizes).softmax(-1);
    return (probs * torch::arange(16, logits.options())).sum(-1);
}

struct Compared {
    torch::Tensor value, expected, grad, expected_grad;
};

// `make` builds the logits view from a leaf; the same upstream gradient goes to both paths.
template <typename Make>
Compared compare(const torch::Tensor& base, Make make) {
    auto a = base.clone().requires_grad_(true);
    auto b = base.clone().requires_grad_(true);
    const auto ours = dfl_expectation(make(a));
    const auto ref = plain_expectation(make(b));
    const auto upstream = torch::randn_like(ref);
    ours.backward(upstream);
    ref.backward(upstream);
    return {ours.detach(), ref.detach(), a.grad(), b.grad()};
}

void expect_equal(const Compared& c) {
    ASSERT_EQ(c.value.sizes(), c.expected.sizes());
    EXPECT_TRUE(torch::allclose(c.value, c.expected, 1e-5, 1e-5))
        << (c.value - c.expected).abs().max().item<float>();
    ASSERT_TRUE(c.grad.defined());
    EXPECT_TRUE(torch::allclose(c.grad, c.expected_grad, 1e-5, 1e-5))
        << (c.grad - c.expected_grad).abs().max().item<float>();
}

TEST(DflExpectation, DenseLogitsMatchThePlainFormula) {
    torch::manual_seed(1);
    expect_equal(compare(torch::randn({3, 37, 64}) * 3, [](const torch::Tensor& t) { return t; }));
}

TEST(DflExpectation, TheBoxPartOfAWiderPredictionIsReadInPlace) {
    torch::manual_seed(2);
    // [B, A, 64 + nc] as the loss builds it; the narrow keeps a row stride of 68.
    expect_equal(compare(torch::randn({2, 300, 68}) * 4,
                         [](const torch::Tensor& t) { return t.narrow(-1, 0, 64); }));
}

TEST(DflExpectation, ALayoutWithoutOneRowStrideIsCopiedFirst) {
    torch::manual_seed(3);
    // A transposed [A, B, 64] view: rows do not follow one stride.
    expect_equal(compare(torch::randn({5, 4, 64}),
                         [](const torch::Tensor& t) { return t.transpose(0, 1); }));
}

TEST(DflExpectation, LargeLogitsStayFinite) {
    torch::manual_seed(4);
    const auto c = compare(torch::randn({4, 64}) * 200, [](const torch::Tensor& t) { return t; });
    EXPECT_TRUE(torch::isfinite(c.value).all().item<bool>());
    EXPECT_TRUE(torch::isfinite(c.grad).all().item<bool>());
    expect_equal(c);
}

TEST(DflExpectation, TheFusedKernelsRunOnThisMachine) {
    // The tests above compare the fused path only where it runs; CI's CPUs have AVX-512.
    if (!dfl_simd_available())
        GTEST_SKIP() << "no AVX-512 here: dfl_expectation takes LibTorch's ops, which the other "
                        "tests compare with themselves";
    const auto logits = torch::randn({2, 64}).requires_grad_(true);
    EXPECT_NE(dfl_expectation(logits).grad_fn()->name().find("DflExpectation"), std::string::npos)
        << dfl_expectation(logits).grad_fn()->name();
}

}  // namespace
