// core/engine/fused_optimizers.h: SGD, Adam and AdamW on LibTorch's fused kernels must follow
// torch::optim's steps (within the last bits: the kernels round in another order), keep the
// same state objects, and skip parameters without a gradient. make_optimizer hands them out.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/engine/fused_optimizers.h"
#include "core/engine/optimizer_factory.h"

namespace crucible::engine {
namespace {

using Make = std::function<std::unique_ptr<torch::optim::Optimizer>(
    const std::vector<torch::optim::OptimizerParamGroup>&)>;

std::vector<torch::Tensor> make_params() {
    torch::manual_seed(11);
    std::vector<torch::Tensor> out;
    for (const auto& shape :
         std::vector<std::vector<std::int64_t>>{{16, 3, 3, 3}, {16}, {7, 5}, {1}})
        out.push_back(torch::randn(shape).requires_grad_(true));
    // A channels-last weight: the state must keep its layout.
    out.push_back(torch::randn({8, 4, 3, 3})
                      .contiguous(torch::MemoryFormat::ChannelsLast)
                      .requires_grad_(true));
    return out;
}

std::vector<torch::Tensor> copy_of(const std::vector<torch::Tensor>& params) {
    std::vector<torch::Tensor> out;
    for (const auto& p : params)
        out.push_back(p.detach().clone().requires_grad_(true));
    return out;
}

// Two groups (decay on the first only), as the trainer builds them.
template <class Options>
std::vector<torch::optim::OptimizerParamGroup> groups(const std::vector<torch::Tensor>& p,
                                                      const Options& base) {
    auto decayed = std::make_unique<Options>(base);
    decayed->weight_decay(5e-2);
    auto plain = std::make_unique<Options>(base);
    plain->weight_decay(0.0);
    std::vector<torch::optim::OptimizerParamGroup> g;
    g.emplace_back(std::vector<torch::Tensor>{p[0], p[2], p[4]}, std::move(decayed));
    g.emplace_back(std::vector<torch::Tensor>{p[1], p[3]}, std::move(plain));
    return g;
}

// Runs `steps` steps on both optimizers with the same seeded gradients; the last parameter has
// no gradient in step 2, so it must be skipped (no state change) that step.
void expect_same_steps(torch::optim::Optimizer& fused, const std::vector<torch::Tensor>& pf,
                       torch::optim::Optimizer& reference, const std::vector<torch::Tensor>& pr,
                       int steps) {
    for (int s = 0; s < steps; ++s) {
        torch::manual_seed(100 + s);
        for (std::size_t i = 0; i < pf.size(); ++i) {
            const torch::Tensor g = torch::randn_like(pf[i]);
            const bool skipped = s == 1 && i + 1 == pf.size();
            pf[i].mutable_grad() = skipped ? torch::Tensor() : g.clone();
            pr[i].mutable_grad() = skipped ? torch::Tensor() : g.clone();
        }
        fused.step();
        reference.step();
        for (std::size_t i = 0; i < pf.size(); ++i) {
            SCOPED_TRACE("step " + std::to_string(s) + ", parameter " + std::to_string(i));
            EXPECT_TRUE(torch::allclose(pf[i], pr[i], 1e-5, 1e-6))
                << (pf[i] - pr[i]).abs().max().item<double>();
            EXPECT_EQ(pf[i].strides(), pr[i].strides());
        }
    }
    EXPECT_EQ(fused.state().size(), reference.state().size());
}

template <class State>
const State& state_of(torch::optim::Optimizer& optimizer, const torch::Tensor& p) {
    return static_cast<const State&>(*optimizer.state().at(p.unsafeGetTensorImpl()));
}

TEST(FusedOptimizers, AdamWFollowsTorchOptim) {
    const auto pf = make_params(), pr = copy_of(pf);
    const auto base = torch::optim::AdamWOptions(1e-2).betas({0.9, 0.999}).weight_decay(0);
    FusedAdamW fused(groups(pf, base), base);
    torch::optim::AdamW reference(groups(pr, base), base);
    expect_same_steps(fused, pf, reference, pr, 4);
    for (std::size_t i = 0; i < pf.size(); ++i) {
        const auto& a = state_of<torch::optim::AdamWParamState>(fused, pf[i]);
        const auto& b = state_of<torch::optim::AdamWParamState>(reference, pr[i]);
        EXPECT_EQ(a.step(), b.step()) << i;
        EXPECT_EQ(a.step(), i + 1 == pf.size() ? 3 : 4) << i;
        EXPECT_TRUE(torch::allclose(a.exp_avg(), b.exp_avg(), 1e-5, 1e-7)) << i;
        EXPECT_TRUE(torch::allclose(a.exp_avg_sq(), b.exp_avg_sq(), 1e-5, 1e-9)) << i;
    }
}

TEST(FusedOptimizers, AdamFollowsTorchOptim) {
    const auto pf = make_params(), pr = copy_of(pf);
    const auto base = torch::optim::AdamOptions(1e-2).weight_decay(0);
    FusedAdam fused(groups(pf, base), base);
    torch::optim::Adam reference(groups(pr, base), base);
    expect_same_steps(fused, pf, reference, pr, 4);
}

TEST(FusedOptimizers, NesterovSgdFollowsTorchOptim) {
    const auto pf = make_params(), pr = copy_of(pf);
    const auto base = torch::optim::SGDOptions(1e-2).momentum(0.937).nesterov(true).weight_decay(0);
    FusedSgd fused(groups(pf, base), base);
    torch::optim::SGD reference(groups(pr, base), base);
    expect_same_steps(fused, pf, reference, pr, 4);
    for (std::size_t i = 0; i < pf.size(); ++i) {
        const auto& a = state_of<torch::optim::SGDParamState>(fused, pf[i]);
        const auto& b = state_of<torch::optim::SGDParamState>(reference, pr[i]);
        EXPECT_TRUE(torch::allclose(a.momentum_buffer(), b.momentum_buffer(), 1e-5, 1e-7)) << i;
    }
}

TEST(FusedOptimizers, PlainSgdAndAmsgradTakeTorchOptimsStep) {
    auto pf = make_params(), pr = copy_of(pf);
    const auto sgd = torch::optim::SGDOptions(1e-2);  // momentum 0: no buffers
    FusedSgd fused(groups(pf, sgd), sgd);
    torch::optim::SGD reference(groups(pr, sgd), sgd);
    expect_same_steps(fused, pf, reference, pr, 2);
    EXPECT_TRUE(fused.state().empty());

    pf = make_params();
    pr = copy_of(pf);
    const auto ams = torch::optim::AdamWOptions(1e-2).amsgrad(true);
    FusedAdamW fused_ams(groups(pf, ams), ams);
    torch::optim::AdamW reference_ams(groups(pr, ams), ams);
    expect_same_steps(fused_ams, pf, reference_ams, pr, 3);
}

TEST(FusedOptimizers, MakeOptimizerHandsThemOut) {
    const auto p = make_params();
    ParamGroups g(1);
    g[0].name = "pg0";
    g[0].params = p;
    for (std::size_t i = 0; i < p.size(); ++i)
        g[0].param_names.push_back("p" + std::to_string(i));
    EXPECT_NE(dynamic_cast<FusedAdamW*>(make_optimizer({"AdamW", 1e-3, 0.9, 0.0}, g, 0).get()),
              nullptr);
    EXPECT_NE(dynamic_cast<FusedAdam*>(make_optimizer({"Adam", 1e-3, 0.9, 0.0}, g, 0).get()),
              nullptr);
    EXPECT_NE(dynamic_cast<FusedSgd*>(make_optimizer({"SGD", 1e-2, 0.937, 0.0}, g, 0).get()),
              nullptr);
}

}  // namespace
}  // namespace crucible::engine
