// The fused head + cross-entropy against the plain formula, cross_entropy(linear(h, w), t):
// the loss and both gradients, across chunk boundaries, ignored rows, dtypes and grad modes.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "core/base/error.h"
#include "plugins/llm_lora/linear_cross_entropy.h"
#include "plugins/llm_lora/llama_model.h"

namespace crucible::llm {
namespace {

struct Case {
    torch::Tensor hidden, weight, target;
};

Case make_case(std::int64_t n, std::int64_t h, std::int64_t v, torch::ScalarType dtype,
               bool weight_trains = true) {
    torch::manual_seed(3);
    Case c;
    c.hidden = torch::randn({n, h}).to(dtype).requires_grad_(true);
    c.weight = (torch::randn({v, h}) * 0.5).to(dtype).requires_grad_(weight_trains);
    c.target = torch::randint(0, v, {n}, torch::kLong);
    c.target.index_put_({torch::arange(0, n, 4)}, -100);  // every fourth row takes no loss
    return c;
}

struct Result {
    torch::Tensor loss, grad_hidden, grad_weight;
};

Result plain(const Case& c, double scale = 1) {
    const auto h = c.hidden.detach().clone().requires_grad_(true);
    const auto w = c.weight.detach().clone().requires_grad_(c.weight.requires_grad());
    const auto logits = torch::nn::functional::linear(h, w).to(torch::kFloat32);
    const auto loss = torch::nn::functional::cross_entropy(
        logits, c.target, torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100));
    (loss * scale).backward();
    return {loss.detach(), h.grad(), w.grad()};
}

Result fused(const Case& c, std::int64_t chunk_rows, double scale = 1) {
    const auto h = c.hidden.detach().clone().requires_grad_(true);
    const auto w = c.weight.detach().clone().requires_grad_(c.weight.requires_grad());
    const auto loss = linear_cross_entropy(h, w, c.target, -100, chunk_rows);
    (loss * scale).backward();
    return {loss.detach(), h.grad(), w.grad()};
}

void expect_close(const torch::Tensor& a, const torch::Tensor& b, double tol, const char* what) {
    ASSERT_EQ(a.defined(), b.defined()) << what;
    if (!a.defined()) return;
    ASSERT_EQ(a.sizes(), b.sizes()) << what;
    EXPECT_EQ(a.scalar_type(), b.scalar_type()) << what;
    const double diff = (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
    EXPECT_LE(diff, tol) << what;
}

TEST(LinearCrossEntropy, EqualsThePlainFormulaAcrossChunkBoundaries) {
    const Case c = make_case(10, 6, 17, torch::kFloat32);
    const Result want = plain(c);
    for (const std::int64_t chunk : {1, 3, 4, 10, 64, 0}) {
        SCOPED_TRACE(chunk);
        const Result got = fused(c, chunk);
        expect_close(got.loss, want.loss, 1e-5, "loss");
        expect_close(got.grad_hidden, want.grad_hidden, 1e-6, "hidden gradient");
        expect_close(got.grad_weight, want.grad_weight, 1e-6, "weight gradient");
    }
}

TEST(LinearCrossEntropy, DoublePrecisionMatchesToRoundingAndScalesWithTheIncomingGradient) {
    const Case c = make_case(9, 5, 11, torch::kFloat64);
    const Result want = plain(c, 3.0);
    const Result got = fused(c, 2, 3.0);
    // The logits are fp32 on both sides, as in the model; the gradients scale by 3.
    expect_close(got.loss, want.loss, 1e-5, "loss");
    expect_close(got.grad_hidden, want.grad_hidden, 1e-6, "hidden gradient");
    expect_close(got.grad_weight, want.grad_weight, 1e-6, "weight gradient");
    EXPECT_GT(got.grad_hidden.abs().max().item<double>(), 1e-3);
}

TEST(LinearCrossEntropy, BFloat16InputsKeepTheirDtypeAndAgreeWithinBf16Rounding) {
    const Case c = make_case(12, 8, 19, torch::kBFloat16);
    const Result want = plain(c);
    const Result got = fused(c, 5);
    expect_close(got.loss, want.loss, 1e-4, "loss");
    expect_close(got.grad_hidden, want.grad_hidden, 2e-2, "hidden gradient");
    expect_close(got.grad_weight, want.grad_weight, 2e-2, "weight gradient");
}

TEST(LinearCrossEntropy, AFrozenHeadGetsNoGradientAndTheHiddenStillDoes) {
    const Case c = make_case(8, 4, 9, torch::kFloat32, /*weight_trains=*/false);
    const Result want = plain(c);
    const Result got = fused(c, 3);
    EXPECT_FALSE(got.grad_weight.defined());
    expect_close(got.grad_hidden, want.grad_hidden, 1e-6, "hidden gradient");
}

TEST(LinearCrossEntropy, IgnoredRowsGetZeroGradientAndAllIgnoredGivesNanLikeCrossEntropy) {
    Case c = make_case(6, 4, 7, torch::kFloat32);
    const Result some = fused(c, 4);
    EXPECT_EQ(some.grad_hidden[0].abs().sum().item<double>(), 0.0);  // row 0's target is -100
    EXPECT_GT(some.grad_hidden[1].abs().sum().item<double>(), 0.0);

    c.target.fill_(-100);
    const Result want = plain(c);
    const Result got = fused(c, 4);
    EXPECT_TRUE(std::isnan(want.loss.item<double>()));
    EXPECT_TRUE(std::isnan(got.loss.item<double>()));
    EXPECT_EQ(got.grad_hidden.abs().sum().item<double>(), 0.0);
    EXPECT_EQ(got.grad_weight.abs().sum().item<double>(), 0.0);
    expect_close(got.grad_hidden, want.grad_hidden, 0, "hidden gradient");
}

TEST(LinearCrossEntropy, WithoutGradModeOnlyTheLossIsMade) {
    const Case c = make_case(7, 4, 9, torch::kFloat32);
    const Result want = plain(c);
    torch::NoGradGuard no_grad;
    const auto loss = linear_cross_entropy(c.hidden, c.weight, c.target, -100, 2);
    EXPECT_FALSE(loss.requires_grad());
    expect_close(loss, want.loss, 1e-5, "loss");
}

TEST(LinearCrossEntropy, RejectsMismatchedShapesWithAMessage) {
    const auto h = torch::randn({4, 3});
    const auto w = torch::randn({5, 3});
    const auto t = torch::zeros({4}, torch::kLong);
    EXPECT_THROW(linear_cross_entropy(h, torch::randn({5, 2}), t), Error);
    EXPECT_THROW(linear_cross_entropy(h.unsqueeze(0), w, t), Error);
    EXPECT_THROW(linear_cross_entropy(h, w, torch::zeros({3}, torch::kLong)), Error);
    EXPECT_THROW(linear_cross_entropy(h, w, torch::zeros({4}, torch::kInt)), Error);
    EXPECT_NO_THROW(linear_cross_entropy(h, w, t));
}

// The model's loss (fused head) against cross_entropy over its own logits, with LoRA and a
// prompt that takes no loss: the same value and the same adapter gradients.
TEST(LinearCrossEntropy, TheModelLossEqualsCrossEntropyOverItsLogits) {
    LlamaConfig cfg;
    cfg.vocab_size = 50;
    cfg.hidden_size = 16;
    cfg.intermediate_size = 24;
    cfg.num_hidden_layers = 2;
    cfg.num_attention_heads = 4;
    cfg.num_key_value_heads = 2;
    cfg.max_position_embeddings = 32;
    for (const bool tied : {false, true}) {
        SCOPED_TRACE(tied);
        cfg.tie_word_embeddings = tied;
        torch::manual_seed(5);
        LlamaForCausalLm m(cfg);
        m->add_lora(LoraSpec{});
        {
            torch::NoGradGuard no_grad;
            for (auto& [name, proj] : m->projections())
                if (proj->has_adapter()) proj->lora.up.normal_(0, 0.2);
        }
        const auto tokens = torch::randint(0, 50, {2, 9}, torch::kLong);
        auto labels = tokens.clone();
        labels.narrow(1, 0, 4).fill_(-100);
        const auto& a = m->projections()[0].second->lora.down;

        const auto logits = m->forward(tokens);
        const auto want = torch::nn::functional::cross_entropy(
            logits.narrow(1, 0, 8).reshape({-1, 50}), labels.narrow(1, 1, 8).reshape({-1}),
            torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100));
        want.backward();
        const auto want_grad = a.grad().clone();
        m->zero_grad();

        const auto got = m->loss(tokens, labels);
        got.backward();
        EXPECT_NEAR(got.item<double>(), want.item<double>(), 1e-5);
        expect_close(a.grad(), want_grad, 1e-6, "adapter gradient");
        EXPECT_GT(want_grad.abs().max().item<double>(), 0.0);
    }
}

}  // namespace
}  // namespace crucible::llm
