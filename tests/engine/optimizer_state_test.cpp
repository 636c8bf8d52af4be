// The optimizer's state in checkpoints, keyed by parameter-group name: it follows the names
// whatever the groups' order, LibTorch's own archive (the layout before names) still loads, by
// name for the default groups pg0..2 and by position into a task's own groups, and state that
// does not fit is refused.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/engine/optimizer_state.h"
#include "core/engine/tensor_state.h"

namespace crucible::engine {
namespace {

using Groups = std::vector<std::vector<torch::Tensor>>;

// Parameters of distinct shapes, so a state placed on the wrong one is noticed.
std::vector<torch::Tensor> make_params() {
    torch::manual_seed(5);
    std::vector<torch::Tensor> out;
    for (std::int64_t n : {3, 4, 5, 6, 7})
        out.push_back(torch::randn({n, 2}).requires_grad_(true));
    return out;
}

std::unique_ptr<torch::optim::Optimizer> adamw(const Groups& groups) {
    std::vector<torch::optim::OptimizerParamGroup> g;
    for (const auto& params : groups)
        g.emplace_back(params, std::make_unique<torch::optim::AdamWOptions>(1e-2));
    return std::make_unique<torch::optim::AdamW>(g, torch::optim::AdamWOptions(1e-2));
}

// Two steps with seeded gradients, so every parameter has moments and a step count.
void two_steps(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& params) {
    torch::manual_seed(9);
    for (int i = 0; i < 2; ++i) {
        for (const auto& p : params)
            p.mutable_grad() = torch::randn_like(p);
        optimizer.step();
    }
}

const torch::optim::AdamWParamState& state_of(torch::optim::Optimizer& optimizer,
                                              const torch::Tensor& p) {
    return static_cast<const torch::optim::AdamWParamState&>(
        *optimizer.state().at(p.unsafeGetTensorImpl()));
}

void expect_same_state(torch::optim::Optimizer& a, const std::vector<torch::Tensor>& pa,
                       torch::optim::Optimizer& b, const std::vector<torch::Tensor>& pb) {
    ASSERT_EQ(pa.size(), pb.size());
    for (std::size_t i = 0; i < pa.size(); ++i) {
        SCOPED_TRACE(i);
        ASSERT_TRUE(b.state().count(pb[i].unsafeGetTensorImpl()));
        EXPECT_EQ(state_of(a, pa[i]).step(), state_of(b, pb[i]).step());
        EXPECT_TRUE(torch::equal(state_of(a, pa[i]).exp_avg(), state_of(b, pb[i]).exp_avg()));
        EXPECT_TRUE(torch::equal(state_of(a, pa[i]).exp_avg_sq(), state_of(b, pb[i]).exp_avg_sq()));
    }
}

TEST(OptimizerState, EachGroupsStateFollowsItsName) {
    const auto p = make_params();
    auto saved = adamw({{p[0], p[1]}, {p[2]}, {p[3], p[4]}});
    two_steps(*saved, p);
    const std::string bytes = optimizer_state_to_bytes(*saved, {"unet", "text_encoder", "head"});
    // Another run lists the same groups in another order.
    const auto q = make_params();
    auto restored = adamw({{q[3], q[4]}, {q[0], q[1]}, {q[2]}});
    optimizer_state_from_bytes(*restored, {"head", "unet", "text_encoder"}, bytes);
    expect_same_state(*saved, p, *restored, q);
    // Groups the file does not have, or of another size, are refused.
    auto renamed = adamw({{q[0], q[1]}, {q[2]}, {q[3], q[4]}});
    EXPECT_THROW(optimizer_state_from_bytes(*renamed, {"unet", "te", "head"}, bytes), Error);
    auto resized = adamw({{q[0]}, {q[1], q[2]}, {q[3], q[4]}});
    EXPECT_THROW(optimizer_state_from_bytes(*resized, {"unet", "text_encoder", "head"}, bytes),
                 Error);
}

TEST(OptimizerState, LibTorchArchiveOfTheDefaultGroupsLoadsByPosition) {
    const auto p = make_params();
    auto saved = adamw({{p[0]}, {p[1], p[2], p[3]}, {p[4]}});
    two_steps(*saved, p);
    const std::string old_bytes = optimizer_to_bytes(*saved);  // as checkpoints had it
    const auto q = make_params();
    auto restored = adamw({{q[0]}, {q[1], q[2], q[3]}, {q[4]}});
    optimizer_state_from_bytes(*restored, {"pg0", "pg1", "pg2"}, old_bytes);
    expect_same_state(*saved, p, *restored, q);
}

TEST(OptimizerState, LibTorchArchiveGoesByPositionIntoATasksOwnGroups) {
    // A LoRA task of before: every parameter in pg1, pg0 and pg2 empty. It now declares `unet`
    // and `text_encoder`, the same parameters in the same order.
    const auto p = make_params();
    auto saved = adamw({{}, {p[0], p[1], p[2], p[3], p[4]}, {}});
    two_steps(*saved, p);
    const std::string old_bytes = optimizer_to_bytes(*saved);
    const auto q = make_params();
    auto restored = adamw({{q[0], q[1], q[2]}, {q[3], q[4]}});
    optimizer_state_from_bytes(*restored, {"unet", "text_encoder"}, old_bytes);
    expect_same_state(*saved, p, *restored, q);
    // In another order the shapes do not fit: refused, not placed on the wrong parameters.
    auto shuffled = adamw({{q[4], q[1], q[2]}, {q[3], q[0]}});
    EXPECT_THROW(optimizer_state_from_bytes(*shuffled, {"unet", "text_encoder"}, old_bytes), Error);
    auto fewer = adamw({{q[0], q[1]}});
    EXPECT_THROW(optimizer_state_from_bytes(*fewer, {"lora"}, old_bytes), Error);
}

TEST(OptimizerState, SgdMomentumBuffersRoundTrip) {
    const auto p = make_params();
    std::vector<torch::optim::OptimizerParamGroup> g;
    g.emplace_back(std::vector<torch::Tensor>{p[0], p[1]},
                   std::make_unique<torch::optim::SGDOptions>(
                       torch::optim::SGDOptions(0.1).momentum(0.9).nesterov(true)));
    torch::optim::SGD saved(g, torch::optim::SGDOptions(0.1));
    two_steps(saved, {p[0], p[1]});
    const std::string bytes = optimizer_state_to_bytes(saved, {"pg1"});
    const auto q = make_params();
    std::vector<torch::optim::OptimizerParamGroup> h;
    h.emplace_back(std::vector<torch::Tensor>{q[0], q[1]},
                   std::make_unique<torch::optim::SGDOptions>(
                       torch::optim::SGDOptions(0.1).momentum(0.9).nesterov(true)));
    torch::optim::SGD restored(h, torch::optim::SGDOptions(0.1));
    optimizer_state_from_bytes(restored, {"pg1"}, bytes);
    for (int i = 0; i < 2; ++i) {
        const auto& a = static_cast<const torch::optim::SGDParamState&>(
            *saved.state().at(p[static_cast<std::size_t>(i)].unsafeGetTensorImpl()));
        const auto& b = static_cast<const torch::optim::SGDParamState&>(
            *restored.state().at(q[static_cast<std::size_t>(i)].unsafeGetTensorImpl()));
        EXPECT_TRUE(torch::equal(a.momentum_buffer(), b.momentum_buffer()));
    }
}

}  // namespace
}  // namespace crucible::engine
