// plugins/detect/model/yolo_blocks.h's Upsample: nearest upsampling by an integer factor whose
// backward reads a channels-last gradient in place (upsample_simd.h) or makes it dense first. Its
// output and its gradient must equal LibTorch's interpolate, for a dense gradient and for a channel
// slice of a wider one (what the neck's torch::cat hands back), channels-last and not.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/base/error.h"
#include "plugins/detect/model/upsample_simd.h"
#include "plugins/detect/model/yolo_blocks.h"

using namespace crucible;

namespace {

namespace F = torch::nn::functional;

torch::Tensor interpolate(const torch::Tensor& x, int64_t factor) {
    const auto s = static_cast<double>(factor);
    return F::interpolate(
        x,
        F::InterpolateFuncOptions().scale_factor(std::vector<double>{s, s}).mode(torch::kNearest));
}

struct Case {
    int64_t factor;
    bool channels_last, sliced_gradient;
};

class UpsampleCases : public ::testing::TestWithParam<Case> {};

TEST_P(UpsampleCases, EqualsInterpolateForwardAndBackward) {
    const Case c = GetParam();
    torch::manual_seed(3);
    const auto format =
        c.channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
    const auto x0 = torch::randn({2, 5, 3, 4}).contiguous(format);
    const int64_t extra = c.sliced_gradient ? 3 : 0;
    const auto wide = torch::randn({2, 5 + extra, 3 * c.factor, 4 * c.factor}).contiguous(format);
    const auto dy = wide.narrow(1, extra, 5);  // a slice when extra > 0

    auto x_ours = x0.clone(format).requires_grad_(true);
    auto x_ref = x0.clone(format).requires_grad_(true);
    detect::Upsample up(c.factor);
    const auto y_ours = up->forward(x_ours);
    const auto y_ref = interpolate(x_ref, c.factor);
    ASSERT_EQ(y_ours.sizes(), y_ref.sizes());
    EXPECT_TRUE(torch::equal(y_ours, y_ref));
    EXPECT_EQ(y_ours.is_contiguous(torch::MemoryFormat::ChannelsLast), c.channels_last);

    y_ours.backward(dy);
    y_ref.backward(dy);
    ASSERT_TRUE(x_ours.grad().defined());
    // Each input pixel sums factor^2 gradients; the two kernels may add them in another order.
    EXPECT_TRUE(torch::allclose(x_ours.grad(), x_ref.grad(), 1e-6, 1e-6));
    EXPECT_GT(x_ours.grad().abs().sum().item<double>(), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Upsample, UpsampleCases,
                         ::testing::Values(Case{2, true, true}, Case{2, true, false},
                                           Case{2, false, true}, Case{3, true, true}));

// The AVX-512 backward itself (upsample_simd.h) on a channel slice: 40 channels, two whole
// vectors and a partial one, equal bit for bit to LibTorch's kernel on a dense copy.
TEST(Upsample, SimdBackwardEqualsLibTorchsOnASlice) {
    if (!detect::upsample_simd_available()) GTEST_SKIP() << "this CPU has no AVX-512";
    torch::manual_seed(4);
    for (const int64_t factor : {2, 3}) {
        const int64_t n = 2, c = 40, h = 3, w = 5;
        const auto wide = torch::randn({n, c + 8, h * factor, w * factor})
                              .contiguous(torch::MemoryFormat::ChannelsLast);
        const auto grad = wide.narrow(1, 8, c);
        const auto expected = at::upsample_nearest2d_backward(
            grad.contiguous(torch::MemoryFormat::ChannelsLast), {h * factor, w * factor},
            {n, c, h, w}, static_cast<double>(factor), static_cast<double>(factor));
        auto ours = torch::empty({n, c, h, w}, torch::MemoryFormat::ChannelsLast);
        const detect::UpsampleShape shape{c, h, w, factor};
        ASSERT_TRUE(detect::upsample_nearest_backward_avx512(grad.data_ptr<float>(), c + 8, shape,
                                                             0, n * h * w, ours.data_ptr<float>()));
        EXPECT_TRUE(torch::equal(ours, expected)) << "factor " << factor;
    }
}

TEST(Upsample, RejectsATensorThatIsNotFourDimensional) {
    detect::Upsample up(2);
    EXPECT_THROW(up->forward(torch::zeros({2, 3, 4})), Error);
}

}  // namespace
