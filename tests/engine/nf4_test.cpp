// NF4 storage (core/engine/nf4.h) beyond the bitsandbytes codes the golden test checks: the
// level table follows from its definition, every dtype and odd size round-trips within the
// quantization step, the linear layer's gradient is the dense one of the dequantized weight, and
// bad weights are refused with a message.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "core/engine/nf4.h"

namespace crucible::engine {
namespace {

// The standard normal's quantile function by bisection on erfc (no table needed).
double normal_quantile(double p) {
    double lo = -10, hi = 10;
    for (int i = 0; i < 200; ++i) {
        const double mid = (lo + hi) / 2;
        (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
    }
    return (lo + hi) / 2;
}

TEST(Nf4, LevelsAreTheNormalQuantilesOfTheQloraConstruction) {
    // QLoRA, Appendix E: 8 quantiles for the positive half and 7 for the negative one, taken
    // at evenly spaced probabilities from 0.5 to 1 - delta (delta = (1/(2·15) + 1/(2·16)) / 2),
    // then scaled so that the largest is 1; zero is exact.
    const double offset = 1 - 0.5 * (1.0 / 30 + 1.0 / 32);
    std::vector<double> positive, negative;
    for (int i = 0; i < 8; ++i)
        positive.push_back(normal_quantile(0.5 + (offset - 0.5) * (i + 1) / 8.0));
    for (int i = 0; i < 7; ++i)
        negative.push_back(-normal_quantile(0.5 + (offset - 0.5) * (i + 1) / 7.0));
    const double top = positive.back();
    std::vector<double> want;
    for (auto it = negative.rbegin(); it != negative.rend(); ++it)
        want.push_back(*it / top);
    want.push_back(0);
    for (double v : positive)
        want.push_back(v / top);
    const auto& levels = nf4_levels();
    ASSERT_EQ(want.size(), levels.size());
    for (std::size_t i = 0; i < levels.size(); ++i)
        EXPECT_NEAR(levels[i], want[i], 1e-6) << "level " << i;
}

TEST(Nf4, DynamicCodeHas256AscendingLevelsFromMinusOneToOne) {
    const torch::Tensor code = dynamic_code_levels();
    ASSERT_EQ(code.numel(), 256);
    EXPECT_TRUE((code.narrow(0, 1, 255) >= code.narrow(0, 0, 255)).all().item<bool>());
    EXPECT_EQ(code.max().item<float>(), 1.0f);
    EXPECT_NEAR(code.min().item<float>(), -0.99297, 1e-5);
    EXPECT_EQ((code == 0).sum().item<std::int64_t>(), 1);
}

TEST(Nf4, EveryDtypeAndOddSizeRoundTripsWithinHalfAStep) {
    torch::manual_seed(3);
    for (auto dtype : {torch::kFloat32, torch::kBFloat16, torch::kFloat16}) {
        for (std::int64_t n : {1, 63, 64, 65, 1001, 64 * 256 + 7}) {
            const torch::Tensor w = torch::randn({n}).to(dtype);
            const Nf4Tensor q = Nf4Tensor::quantize(w.view({n}));
            const torch::Tensor back = q.dequantize();
            EXPECT_EQ(back.scalar_type(), dtype);
            EXPECT_EQ(back.sizes(), w.sizes());
            // The widest gap between levels is 1 - 0.696: half of it, times the block maximum
            // (itself stored to about 1 %), bounds every value's error.
            const torch::Tensor wf = w.to(torch::kFloat32), bf = back.to(torch::kFloat32);
            const std::int64_t blocks = (n + 63) / 64;
            for (std::int64_t b = 0; b < blocks; ++b) {
                const auto len = std::min<std::int64_t>(64, n - b * 64);
                const float absmax = wf.narrow(0, b * 64, len).abs().max().item<float>();
                const float err = (wf.narrow(0, b * 64, len) - bf.narrow(0, b * 64, len))
                                      .abs()
                                      .max()
                                      .item<float>();
                EXPECT_LE(err, absmax * 0.16f + 0.01f) << "dtype " << dtype << " n " << n;
            }
            EXPECT_EQ(q.packed.numel(), (n + 1) / 2);
            EXPECT_EQ(q.absmax_codes.numel(), blocks);
            EXPECT_EQ(q.absmax_scales.numel(), (blocks + 255) / 256);
        }
    }
}

// On a CPU with AVX-512 (BF16) the whole blocks take nf4_simd.cpp's path and the short last
// block the portable loop's, so this holds both against the ops path.
TEST(Nf4, TheCpuLoopAndTheOpsPathGiveTheSameValues) {
    torch::manual_seed(5);
    for (auto dtype : {torch::kFloat32, torch::kBFloat16, torch::kFloat16})
        for (std::int64_t n : {1, 63, 64, 129, 3001}) {
            const Nf4Tensor q = Nf4Tensor::quantize(torch::randn({n}).to(dtype));
            EXPECT_TRUE(torch::equal(q.dequantize(), q.dequantize_in_ops()))
                << "dtype " << dtype << " n " << n;
        }
}

TEST(Nf4, ZerosStayZeroAndStorageIsAboutFourBitsAWeight) {
    const Nf4Tensor zeros = Nf4Tensor::quantize(torch::zeros({4, 64}));
    EXPECT_EQ(zeros.dequantize().abs().max().item<float>(), 0.0f);
    const Nf4Tensor q = Nf4Tensor::quantize(torch::randn({512, 512}));
    const double bits = 8.0 * static_cast<double>(q.storage_bytes()) / (512.0 * 512.0);
    EXPECT_GT(bits, 4.0);
    EXPECT_LT(bits, 4.2);
}

TEST(Nf4, LinearGradientIsTheDenseGradientOfTheDequantizedWeight) {
    torch::manual_seed(4);
    const Nf4Tensor w = Nf4Tensor::quantize(torch::randn({24, 40}));
    const torch::Tensor bias = torch::randn({24});
    const torch::Tensor x = torch::randn({3, 5, 40}, torch::requires_grad());
    const torch::Tensor x_dense = x.detach().clone().requires_grad_(true);
    const torch::Tensor y = nf4_linear(x, w, bias);
    const torch::Tensor y_dense = torch::nn::functional::linear(x_dense, w.dequantize(), bias);
    EXPECT_TRUE(torch::allclose(y, y_dense, 1e-5, 1e-5));
    const torch::Tensor g = torch::randn(y.sizes());
    y.backward(g);
    y_dense.backward(g);
    EXPECT_TRUE(torch::allclose(x.grad(), x_dense.grad(), 1e-5, 1e-5));
}

TEST(Nf4, BadWeightsAreRefusedWithAMessage) {
    EXPECT_THROW(
        {
            try {
                Nf4Tensor::quantize(torch::zeros({0}));
            } catch (const std::exception& e) {
                EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos);
                throw;
            }
        },
        std::exception);
    EXPECT_THROW(Nf4Tensor::quantize(torch::ones({64}, torch::kInt32)), std::exception);
    const Nf4Tensor w = Nf4Tensor::quantize(torch::randn({8, 16}));
    EXPECT_THROW(nf4_linear(torch::randn({2, 15}), w), std::exception);
}

}  // namespace
}  // namespace crucible::engine
