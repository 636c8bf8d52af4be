#include "core/engine/activation_checkpoint.h"

#include <ATen/core/ivalue.h>

#include <utility>

#include "core/base/error.h"
#include "core/engine/autocast.h"

namespace crucible::engine {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What the backward pass needs besides the saved inputs: the block, which inputs want a
// gradient, and the random state.
struct SavedBlock : torch::CustomClassHolder {
    CheckpointedMultiBlock block;
    std::vector<bool> requires_grad;
    at::Generator generator;
    at::Tensor rng_state;
    AutocastMode autocast;
};

at::Generator default_generator_of(const torch::Device& device) {
    return at::globalContext().defaultGenerator(device);
}

at::Tensor generator_state(at::Generator& generator) {
    std::lock_guard<std::mutex> lock(generator.mutex());
    return generator.get_state();
}

void set_generator_state(at::Generator& generator, const at::Tensor& state) {
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(state);
}

struct CheckpointFunction : torch::autograd::Function<CheckpointFunction> {
    // `inputs` are the function's inputs one by one (a TensorList is flattened); `anchor`
    // requires grad so that the output does too even when no input does: the parameters inside
    // the block are not inputs of this function. The block runs with grad mode off, so it records
    // no graph here (activation_checkpoint_test checks it: without this guard it saw grad mode on
    // inside the block with Debian's LibTorch 1.13, although Function::apply is meant to clear it).
    static torch::Tensor forward(AutogradContext* ctx, at::TensorList inputs,
                                 const torch::Tensor& anchor,
                                 c10::intrusive_ptr<SavedBlock> saved) {
        (void)anchor;
        const std::vector<torch::Tensor> xs = inputs.vec();
        ctx->save_for_backward(xs);
        for (const auto& x : xs)
            saved->requires_grad.push_back(x.requires_grad());
        ctx->saved_data["block"] = c10::IValue::make_capsule(std::move(saved));
        auto* block = static_cast<SavedBlock*>(ctx->saved_data["block"].toCapsule().get());
        torch::NoGradGuard no_grad;
        return block->block(xs);
    }

    static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
        const variable_list inputs = ctx->get_saved_variables();
        auto* saved = static_cast<SavedBlock*>(ctx->saved_data["block"].toCapsule().get());

        std::vector<torch::Tensor> xs;
        xs.reserve(inputs.size());
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            xs.push_back(inputs[i].detach());
            if (saved->requires_grad[i]) xs.back().requires_grad_(true);
        }
        torch::Tensor y;
        {
            // Same random numbers as the first pass, then back to where the run was.
            const at::Tensor now = generator_state(saved->generator);
            set_generator_state(saved->generator, saved->rng_state);
            torch::AutoGradMode grad_mode(true);
            AutocastGuard autocast(saved->autocast);
            y = saved->block(xs);
            set_generator_state(saved->generator, now);
        }
        // A block with nothing trainable inside and frozen inputs has nothing to give back.
        if (y.requires_grad()) torch::autograd::backward({y}, {grad_outputs[0]});
        variable_list grads;
        grads.reserve(xs.size() + 2);
        for (std::size_t i = 0; i < xs.size(); ++i)
            grads.push_back(saved->requires_grad[i] ? xs[i].grad() : torch::Tensor());
        grads.push_back(torch::Tensor());  // anchor
        grads.push_back(torch::Tensor());  // saved block
        return grads;
    }
};

}  // namespace

torch::Tensor checkpointed(CheckpointedMultiBlock block, const std::vector<torch::Tensor>& inputs) {
    if (inputs.empty()) throw Error("checkpointed: a block needs at least one input");
    for (const auto& x : inputs)
        if (!x.defined()) throw Error("checkpointed: an input of the block is undefined");
    if (!torch::GradMode::is_enabled()) return block(inputs);
    auto saved = c10::make_intrusive<SavedBlock>();
    saved->block = std::move(block);
    saved->generator = default_generator_of(inputs.front().device());
    saved->rng_state = generator_state(saved->generator);
    saved->autocast = current_autocast();
    static const torch::Tensor anchor = torch::empty({0}, torch::requires_grad());
    return CheckpointFunction::apply(at::TensorList(inputs), anchor, saved);
}

torch::Tensor checkpointed(CheckpointedBlock block, const torch::Tensor& input) {
    if (!torch::GradMode::is_enabled()) return block(input);
    return checkpointed(
        [block = std::move(block)](const std::vector<torch::Tensor>& in) { return block(in[0]); },
        std::vector<torch::Tensor>{input});
}

}  // namespace crucible::engine
