// Gradient checkpointing: the same gradients as a plain backward, for inputs (one or several) and
// for parameters inside the block (also when the block's input is frozen), the same dropout masks
// in the recomputation, and no recorded graph inside the block.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/engine/activation_checkpoint.h"

namespace crucible::engine {
namespace {

struct Block : torch::nn::Module {
    Block() {
        fc1 = register_module("fc1", torch::nn::Linear(8, 16));
        fc2 = register_module("fc2", torch::nn::Linear(16, 8));
    }
    torch::Tensor forward(const torch::Tensor& x, double dropout) {
        torch::Tensor h = torch::silu(fc1(x));
        h = torch::dropout(h, dropout, /*train=*/dropout > 0);
        return x + fc2(h);
    }
    torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

struct Grads {
    torch::Tensor input, w1, b2;
};

Grads run(bool use_checkpoint, bool input_requires_grad, double dropout, int blocks = 2) {
    torch::manual_seed(7);
    std::vector<std::shared_ptr<Block>> layers;
    for (int i = 0; i < blocks; ++i)
        layers.push_back(std::make_shared<Block>());
    torch::Tensor x = torch::randn({4, 8});
    if (input_requires_grad) x.requires_grad_(true);
    torch::manual_seed(99);  // the dropout masks
    torch::Tensor h = x;
    for (auto& layer : layers) {
        if (use_checkpoint)
            h = checkpointed(
                [layer, dropout](const torch::Tensor& in) { return layer->forward(in, dropout); },
                h);
        else
            h = layer->forward(h, dropout);
    }
    (h * h).sum().backward();
    return {input_requires_grad ? x.grad() : torch::Tensor(), layers[0]->fc1->weight.grad(),
            layers.back()->fc2->bias.grad()};
}

TEST(ActivationCheckpoint, GradientsEqualAPlainBackward) {
    const Grads plain = run(false, true, 0.0);
    const Grads ckpt = run(true, true, 0.0);
    ASSERT_TRUE(ckpt.input.defined());
    ASSERT_TRUE(ckpt.w1.defined());
    EXPECT_TRUE(torch::allclose(plain.input, ckpt.input, 1e-6, 1e-6));
    EXPECT_TRUE(torch::allclose(plain.w1, ckpt.w1, 1e-6, 1e-6));
    EXPECT_TRUE(torch::allclose(plain.b2, ckpt.b2, 1e-6, 1e-6));
}

TEST(ActivationCheckpoint, ParametersTrainBehindAFrozenInput) {
    const Grads plain = run(false, false, 0.0);
    const Grads ckpt = run(true, false, 0.0);
    ASSERT_TRUE(ckpt.w1.defined()) << "the first block's weights got no gradient";
    EXPECT_TRUE(torch::allclose(plain.w1, ckpt.w1, 1e-6, 1e-6));
    EXPECT_TRUE(torch::allclose(plain.b2, ckpt.b2, 1e-6, 1e-6));
}

TEST(ActivationCheckpoint, RecomputationSeesTheSameDropoutMasks) {
    const Grads plain = run(false, true, 0.5);
    const Grads ckpt = run(true, true, 0.5);
    EXPECT_TRUE(torch::allclose(plain.w1, ckpt.w1, 1e-6, 1e-6));
    EXPECT_TRUE(torch::allclose(plain.input, ckpt.input, 1e-6, 1e-6));
    // And the run's random stream continues as if nothing had been replayed.
    torch::manual_seed(5);
    auto block = std::make_shared<Block>();
    const torch::Tensor x = torch::randn({4, 8}, torch::requires_grad());
    at::Generator cpu = at::globalContext().defaultGenerator(torch::kCPU);  // a handle
    const auto seed_state = cpu.get_state();
    checkpointed([block](const torch::Tensor& in) { return block->forward(in, 0.5); }, x)
        .sum()
        .backward();
    const torch::Tensor after_ckpt = torch::rand({3});
    cpu.set_state(seed_state);
    (void)block->forward(x, 0.5);
    EXPECT_TRUE(torch::equal(after_ckpt, torch::rand({3})));
}

// A frozen block (nothing trainable, frozen input) before a trainable one: backward passes it.
TEST(ActivationCheckpoint, FrozenBlockBeforeATrainableOne) {
    auto frozen = std::make_shared<Block>(), trained = std::make_shared<Block>();
    for (auto& p : frozen->parameters())
        p.requires_grad_(false);
    const torch::Tensor x = torch::randn({4, 8});
    torch::Tensor h =
        checkpointed([frozen](const torch::Tensor& in) { return frozen->forward(in, 0.0); }, x);
    h = checkpointed([trained](const torch::Tensor& in) { return trained->forward(in, 0.0); }, h);
    h.sum().backward();
    ASSERT_TRUE(trained->fc1->weight.grad().defined());
    EXPECT_GT(trained->fc1->weight.grad().abs().sum().item<float>(), 0.0f);
}

TEST(ActivationCheckpoint, KeepsNoGraphInsideTheBlock) {
    auto block = std::make_shared<Block>();
    const torch::Tensor x = torch::randn({4, 8}, torch::requires_grad());
    // Grad mode inside the block, call by call: off in the forward pass (nothing recorded), on in
    // the recomputation during backward.
    auto grad_modes = std::make_shared<std::vector<bool>>();
    const torch::Tensor y = checkpointed(
        [block, grad_modes](const torch::Tensor& in) {
            grad_modes->push_back(torch::GradMode::is_enabled());
            return block->forward(in, 0.0);
        },
        x);
    ASSERT_TRUE(y.requires_grad());
    ASSERT_EQ(grad_modes->size(), 1u);
    EXPECT_FALSE(grad_modes->front()) << "the block's forward pass recorded a graph";
    // One node for the whole block, whose only inputs are the block input and the anchor.
    ASSERT_NE(y.grad_fn(), nullptr);
    EXPECT_EQ(y.grad_fn()->num_inputs(), 1u);
    EXPECT_LE(y.grad_fn()->next_edges().size(), 2u);
    y.sum().backward();
    ASSERT_EQ(grad_modes->size(), 2u) << "the block ran again in backward, exactly once";
    EXPECT_TRUE((*grad_modes)[1]);
    EXPECT_TRUE(x.grad().defined());
    torch::NoGradGuard no_grad;
    const torch::Tensor z =
        checkpointed([block](const torch::Tensor& in) { return block->forward(in, 0.0); }, x);
    EXPECT_FALSE(z.requires_grad());
}

// Two inputs (hidden states and a side input, as a cross-attention block takes), both with
// gradients, the side one of another dtype and shape: the same gradients as a plain backward,
// for both inputs and for the parameters inside.
struct TwoInputGrads {
    torch::Tensor x, side, w1;
};

TwoInputGrads run_two_inputs(bool use_checkpoint, bool side_requires_grad) {
    torch::manual_seed(11);
    auto layer = std::make_shared<Block>();
    auto proj = std::make_shared<torch::nn::Linear>(torch::nn::Linear(3, 8));
    torch::Tensor x = torch::randn({4, 8}, torch::requires_grad());
    torch::Tensor side = torch::randn({3}, torch::kFloat64);
    if (side_requires_grad) side.requires_grad_(true);
    // The side input goes through a graph of its own before the block (a text encoder's).
    const torch::Tensor side_in = side * 2;
    auto block = [layer, proj](const std::vector<torch::Tensor>& in) {
        const torch::Tensor s = (*proj)(in[1].to(torch::kFloat32)).tanh();
        return layer->forward(in[0] * s, 0.0);
    };
    torch::Tensor h = use_checkpoint ? checkpointed(block, {x, side_in}) : block({x, side_in});
    h = h * h;  // and a graph after it
    h.sum().backward();
    return {x.grad(), side_requires_grad ? side.grad() : torch::Tensor(),
            layer->fc1->weight.grad()};
}

TEST(ActivationCheckpoint, EveryInputGetsThePlainGradient) {
    for (bool side_grad : {true, false}) {
        const TwoInputGrads plain = run_two_inputs(false, side_grad);
        const TwoInputGrads ckpt = run_two_inputs(true, side_grad);
        ASSERT_TRUE(ckpt.x.defined()) << side_grad;
        ASSERT_TRUE(ckpt.w1.defined()) << side_grad;
        EXPECT_TRUE(torch::allclose(plain.x, ckpt.x, 1e-6, 1e-6)) << side_grad;
        EXPECT_TRUE(torch::allclose(plain.w1, ckpt.w1, 1e-6, 1e-6)) << side_grad;
        if (side_grad) {
            ASSERT_TRUE(ckpt.side.defined());
            EXPECT_EQ(ckpt.side.scalar_type(), torch::kFloat64);
            EXPECT_EQ(ckpt.side.sizes(), plain.side.sizes());
            EXPECT_TRUE(torch::allclose(plain.side, ckpt.side, 1e-6, 1e-6));
        }
    }
    // One node for the block; its inputs: both tensors and the anchor.
    const torch::Tensor a = torch::randn({2}, torch::requires_grad());
    const torch::Tensor b = torch::randn({2}, torch::requires_grad());
    const torch::Tensor y = checkpointed(
        [](const std::vector<torch::Tensor>& in) { return (in[0] * in[1]).exp(); }, {a, b});
    ASSERT_NE(y.grad_fn(), nullptr);
    EXPECT_EQ(y.grad_fn()->next_edges().size(), 3u);
    y.sum().backward();
    EXPECT_TRUE(torch::allclose(a.grad(), (a * b).exp().detach() * b.detach()));
    EXPECT_TRUE(torch::allclose(b.grad(), (a * b).exp().detach() * a.detach()));
}

}  // namespace
}  // namespace crucible::engine
