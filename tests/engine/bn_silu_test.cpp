// core/engine/bn_silu.h: the fused batch norm + SiLU against LibTorch's BatchNorm2d followed by
// torch::silu, on the same inputs: the output, the running statistics and num_batches_tracked,
// and the gradients of the input, weight and bias, with the incoming gradient both dense and a
// channel slice of a wider tensor (as torch::cat's backward hands it back); the cases it must
// decline; and the exp it uses, over SiLU's whole useful range.
#include "core/engine/bn_silu.h"
#include "core/engine/fused_kernels.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "core/base/cpu_features.h"
#include "core/engine/bn_silu_simd.h"

using namespace crucible;

namespace {

// Why a test of the fused path skips where it cannot run.
constexpr const char* kNoFusedPath =
    "this CPU has no AVX-512, so the fused path declines every case (tested in "
    "DeclinesWhatItCannotTake)";

bool fused_kernels_here() {
    return engine::bn_silu_avx512_available(16);
}

struct Outcome {
    torch::Tensor y, dx, dw, db, running_mean, running_var, batches;
};

// silu(bn(x)) forward and backward with dy = the first `channels` channels of `wide_dy`.
Outcome run(bool fused, const torch::Tensor& x_in, const torch::Tensor& wide_dy,
            const torch::Tensor& weight, const torch::Tensor& bias) {
    engine::set_fused_cpu_kernels_enabled(fused);
    const std::int64_t c = x_in.size(1);
    torch::nn::BatchNorm2d bn(torch::nn::BatchNorm2dOptions(c).eps(1e-3).momentum(0.03));
    {
        torch::NoGradGuard no_grad;
        bn->weight.copy_(weight);
        bn->bias.copy_(bias);
        bn->running_mean.fill_(0.5);
        bn->running_var.fill_(2.0);
    }
    bn->train();
    auto x = x_in.detach().clone(torch::MemoryFormat::ChannelsLast).requires_grad_(true);
    torch::Tensor y;
    if (auto f = engine::fused_bn_silu(x, *bn)) {
        EXPECT_TRUE(fused) << "the fused path ran while switched off";
        y = *f;
    } else {
        EXPECT_FALSE(fused && fused_kernels_here()) << "the fused path declined a case it takes";
        y = torch::silu(bn->forward(x));
    }
    y.backward(wide_dy.narrow(1, 0, c));
    engine::set_fused_cpu_kernels_enabled(true);
    return {y.detach(),
            x.grad(),
            bn->weight.grad(),
            bn->bias.grad(),
            bn->running_mean.clone(),
            bn->running_var.clone(),
            bn->num_batches_tracked.clone()};
}

void expect_close(const torch::Tensor& a, const torch::Tensor& b, double rtol, double atol,
                  const std::string& what) {
    ASSERT_EQ(a.sizes(), b.sizes()) << what;
    const double err = (a - b).abs().max().item<double>();
    const double scale = b.abs().max().item<double>();
    EXPECT_LE(err, atol + rtol * scale)
        << what << ": max |difference| " << err << ", max |value| " << scale;
}

}  // namespace

TEST(FusedBnSilu, EqualsBatchNormThenSiluForwardBackwardAndRunningStatistics) {
    if (!fused_kernels_here()) GTEST_SKIP() << kNoFusedPath;
    torch::manual_seed(3);
    for (const std::int64_t c : {16, 48, 64}) {
        for (const std::int64_t wide : {c, 2 * c}) {  // dy dense, or a channel slice
            const std::string name =
                "channels " + std::to_string(c) + ", dy row stride " + std::to_string(wide);
            // An offset mean and a spread that make a naive one-pass variance lose digits.
            const auto x =
                (torch::randn({4, c, 9, 7}) * 3 + 5).contiguous(torch::MemoryFormat::ChannelsLast);
            const auto dy =
                torch::randn({4, wide, 9, 7}).contiguous(torch::MemoryFormat::ChannelsLast);
            const auto weight = torch::rand({c}) + 0.5;
            const auto bias = torch::randn({c});
            const Outcome fused = run(true, x, dy, weight, bias);
            const Outcome plain = run(false, x, dy, weight, bias);
            expect_close(fused.y, plain.y, 1e-5, 1e-5, name + ": output");
            EXPECT_TRUE(fused.y.is_contiguous(torch::MemoryFormat::ChannelsLast)) << name;
            expect_close(fused.running_mean, plain.running_mean, 1e-6, 1e-6,
                         name + ": running mean");
            expect_close(fused.running_var, plain.running_var, 1e-5, 1e-6, name + ": running var");
            EXPECT_EQ(fused.batches.item<std::int64_t>(), plain.batches.item<std::int64_t>())
                << name;
            expect_close(fused.dx, plain.dx, 1e-4, 1e-5, name + ": input gradient");
            expect_close(fused.dw, plain.dw, 1e-4, 1e-4, name + ": weight gradient");
            expect_close(fused.db, plain.db, 1e-4, 1e-4, name + ": bias gradient");
        }
    }
}

TEST(FusedBnSilu, KeepsTheVarianceOfAChannelWhoseMeanDwarfsItsSpread) {
    if (!fused_kernels_here()) GTEST_SKIP() << "no AVX-512 on this CPU: the fused path declines";
    torch::manual_seed(6);
    // Mean 1000, standard deviation 0.05: sum of squares minus squared sum would keep no digit
    // of the variance in float, and few in double.
    const auto x =
        (torch::randn({8, 16, 20, 20}) * 0.05 + 1000).contiguous(torch::MemoryFormat::ChannelsLast);
    const auto dy = torch::randn({8, 16, 20, 20}).contiguous(torch::MemoryFormat::ChannelsLast);
    const auto w = torch::ones({16}), b = torch::zeros({16});
    const Outcome fused = run(true, x, dy, w, b);
    const Outcome plain = run(false, x, dy, w, b);
    // The judge is the formula in double precision, on the same float inputs.
    const auto xd = x.to(torch::kFloat64);
    const auto mean = xd.mean({0, 2, 3}, true);
    const auto var = (xd - mean).pow(2).mean({0, 2, 3}, true);
    const auto expected = torch::silu((xd - mean) / (var + 1e-3).sqrt());
    const double fused_err = (fused.y.to(torch::kFloat64) - expected).abs().max().item<double>();
    const double plain_err = (plain.y.to(torch::kFloat64) - expected).abs().max().item<double>();
    std::printf("output error against double: fused %.3g, LibTorch %.3g\n", fused_err, plain_err);
    EXPECT_LE(fused_err, 1e-3);
    EXPECT_LE(fused_err, 2 * plain_err + 1e-5) << "no worse than LibTorch's";
    expect_close(fused.running_var, plain.running_var, 1e-3, 1e-6, "running var");
}

TEST(FusedBnSilu, SpreadsRowsOverThreadsWithTheSameResult) {
    if (!fused_kernels_here()) GTEST_SKIP() << "no AVX-512 on this CPU: the fused path declines";
    torch::manual_seed(4);
    const auto x = torch::randn({8, 32, 40, 40}).contiguous(torch::MemoryFormat::ChannelsLast);
    const auto dy = torch::randn({8, 32, 40, 40}).contiguous(torch::MemoryFormat::ChannelsLast);
    const auto w = torch::ones({32}), b = torch::zeros({32});
    const int threads = at::get_num_threads();
    at::set_num_threads(1);
    const Outcome one = run(true, x, dy, w, b);
    at::set_num_threads(2);
    const Outcome two = run(true, x, dy, w, b);
    at::set_num_threads(threads);
    expect_close(two.y, one.y, 1e-6, 1e-6, "output");
    expect_close(two.dx, one.dx, 1e-5, 1e-6, "input gradient");
    expect_close(two.dw, one.dw, 1e-5, 1e-5, "weight gradient");
    const Outcome plain = run(false, x, dy, w, b);
    expect_close(two.dx, plain.dx, 1e-4, 1e-5, "input gradient against LibTorch");
}

TEST(FusedBnSilu, DeclinesWhatItCannotTake) {
    const auto cl = torch::MemoryFormat::ChannelsLast;
    torch::nn::BatchNorm2d bn(torch::nn::BatchNorm2dOptions(32).momentum(0.03));
    bn->train();
    const auto good = torch::randn({2, 32, 4, 4}).contiguous(cl);
    EXPECT_EQ(engine::fused_bn_silu(good, *bn).has_value(), fused_kernels_here());
    struct Case {
        const char* name;
        torch::Tensor x;
    };
    const Case cases[] = {
        {"NCHW layout", torch::randn({2, 32, 4, 4})},
        {"bf16 (autocast)", good.to(torch::kBFloat16)},
        {"20 channels (not a multiple of 16)", torch::randn({2, 20, 4, 4}).contiguous(cl)},
        {"one value per channel", torch::randn({1, 32, 1, 1}).contiguous(cl)},
        {"3-D", torch::randn({2, 32, 16})},
    };
    for (const Case& c : cases) {
        torch::nn::BatchNorm2d m(torch::nn::BatchNorm2dOptions(c.x.size(1)).momentum(0.03));
        m->train();
        EXPECT_FALSE(engine::fused_bn_silu(c.x, *m).has_value()) << c.name;
    }
    bn->eval();
    EXPECT_FALSE(engine::fused_bn_silu(good, *bn).has_value()) << "eval: running statistics";
    bn->train();
    torch::nn::BatchNorm2d cumulative(torch::nn::BatchNorm2dOptions(32).momentum(std::nullopt));
    cumulative->train();
    EXPECT_FALSE(engine::fused_bn_silu(good, *cumulative).has_value()) << "no momentum";
    engine::set_fused_cpu_kernels_enabled(false);
    EXPECT_FALSE(engine::fused_bn_silu(good, *bn).has_value()) << "switched off";
    engine::set_fused_cpu_kernels_enabled(true);
    // Nothing moved in the modules it declined.
    EXPECT_EQ(cumulative->num_batches_tracked.item<std::int64_t>(), 0);
}

TEST(FusedBnSilu, ForwardKernelMatchesSiluOverItsWholeRange) {
    if (!fused_kernels_here()) GTEST_SKIP() << "no AVX-512 on this CPU";
    // z from -100 to 100 (exp's clamps at both ends) through mean 0, scale 1, shift 0: y = silu(z).
    const std::int64_t n = 16 * 4096;
    const auto z = torch::linspace(-100, 100, n);
    std::vector<float> one(16, 1.0f), zero(16, 0.0f);
    auto y = torch::empty({n});
    ASSERT_TRUE(engine::bn_silu_forward_avx512({z.data_ptr<float>(), 16}, 16, 0, n / 16,
                                               zero.data(), one.data(), zero.data(),
                                               y.data_ptr<float>()));
    const auto expected = torch::silu(z.to(torch::kFloat64));
    const auto err = (y.to(torch::kFloat64) - expected).abs() / (expected.abs() + 1e-30);
    // Relative to each value; SiLU's tiny negative tail (below -87, exp clamped) is absolute.
    const auto tail = z.lt(-80);
    EXPECT_LE(err.masked_fill(tail, 0).max().item<double>(), 1e-6);  // a few ulp
    EXPECT_LE((y.to(torch::kFloat64) - expected).abs().masked_select(tail).max().item<double>(),
              1e-30);
}

namespace {

// silu(bn(x)) in training mode through the fused path (fused_kernels_here() must hold).
torch::Tensor fused_forward(torch::nn::BatchNorm2d& bn, const torch::Tensor& x) {
    auto y = engine::fused_bn_silu(x, *bn);
    EXPECT_TRUE(y.has_value());
    return y ? *y : torch::Tensor();
}

}  // namespace

TEST(FusedBnSilu, WritesTheInputGradientOverAnOutputGradientNothingElseHolds) {
    if (!fused_kernels_here()) GTEST_SKIP() << kNoFusedPath;
    torch::manual_seed(4);
    const auto x0 =
        (torch::randn({2, 32, 6, 5}) * 2 + 1).contiguous(torch::MemoryFormat::ChannelsLast);
    const auto m = torch::randn({2, 32, 6, 5}).contiguous(torch::MemoryFormat::ChannelsLast);
    torch::nn::BatchNorm2d bn(torch::nn::BatchNorm2dOptions(32).eps(1e-3).momentum(0.03));
    bn->train();

    // The gradient of y is made by the product's backward: a fresh tensor only the engine holds.
    auto x = x0.clone().requires_grad_(true);
    const torch::Tensor y = fused_forward(bn, x);
    std::uintptr_t incoming = 0;
    y.register_hook(
        [&](const torch::Tensor& g) { incoming = reinterpret_cast<std::uintptr_t>(g.data_ptr()); });
    (y * m).sum().backward();
    ASSERT_NE(incoming, 0u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(x.grad().data_ptr()), incoming)
        << "the input gradient was written to a new buffer";

    // LibTorch's batch norm + SiLU with the same (default) affine parameters and dy = m.
    const Outcome plain = run(false, x0, m, torch::ones({32}), torch::zeros({32}));
    expect_close(x.grad(), plain.dx, 1e-4, 1e-5, "input gradient");
}

TEST(FusedBnSilu, LeavesAnOutputGradientItSharesUntouched) {
    if (!fused_kernels_here()) GTEST_SKIP() << kNoFusedPath;
    torch::manual_seed(5);
    const auto m = torch::randn({2, 16, 4, 4}).contiguous(torch::MemoryFormat::ChannelsLast);
    torch::nn::BatchNorm2d bn(torch::nn::BatchNorm2dOptions(16));
    bn->train();
    auto x = torch::randn({2, 16, 4, 4})
                 .contiguous(torch::MemoryFormat::ChannelsLast)
                 .requires_grad_(true);
    auto w = torch::zeros({2, 16, 4, 4})
                 .contiguous(torch::MemoryFormat::ChannelsLast)
                 .requires_grad_(true);
    // The sum's backward hands one gradient tensor to both branches.
    ((fused_forward(bn, x) + w) * m).sum().backward();
    EXPECT_TRUE(torch::equal(w.grad(), m)) << "the other branch's gradient was overwritten";
}
