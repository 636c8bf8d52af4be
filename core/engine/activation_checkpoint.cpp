#include "core/engine/activation_checkpoint.h"

#include <ATen/core/ivalue.h>

#include <optional>
#include <utility>

#include "core/engine/autocast.h"

namespace crucible::engine {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What the backward pass needs besides the saved input: the block and the random state.
struct SavedBlock : torch::CustomClassHolder {
    CheckpointedBlock block;
    at::Generator generator;
    at::Tensor rng_state;
    bool autocast = false;
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
    // `anchor` requires grad so that the output does too even when `input` does not: the
    // parameters inside the block are not inputs of this function.
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input,
                                 const torch::Tensor& anchor,
                                 c10::intrusive_ptr<SavedBlock> saved) {
        (void)anchor;
        ctx->save_for_backward({input});
        ctx->saved_data["input_requires_grad"] = input.requires_grad();
        ctx->saved_data["block"] = c10::IValue::make_capsule(std::move(saved));
        auto* block = static_cast<SavedBlock*>(ctx->saved_data["block"].toCapsule().get());
        torch::NoGradGuard no_grad;
        return block->block(input);
    }

    static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
        const torch::Tensor input = ctx->get_saved_variables()[0];
        const bool input_requires_grad = ctx->saved_data["input_requires_grad"].toBool();
        auto* saved = static_cast<SavedBlock*>(ctx->saved_data["block"].toCapsule().get());

        torch::Tensor x = input.detach();
        if (input_requires_grad) x.requires_grad_(true);
        torch::Tensor y;
        {
            // Same random numbers as the first pass, then back to where the run was.
            const at::Tensor now = generator_state(saved->generator);
            set_generator_state(saved->generator, saved->rng_state);
            torch::AutoGradMode grad_mode(true);
            AutocastGuard autocast(saved->autocast);
            y = saved->block(x);
            set_generator_state(saved->generator, now);
        }
        // A block with nothing trainable inside and a frozen input has nothing to give back.
        if (y.requires_grad()) torch::autograd::backward({y}, {grad_outputs[0]});
        return {input_requires_grad ? x.grad() : torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

}  // namespace

torch::Tensor checkpointed(CheckpointedBlock block, const torch::Tensor& input) {
    if (!torch::GradMode::is_enabled()) return block(input);
    auto saved = c10::make_intrusive<SavedBlock>();
    saved->block = std::move(block);
    saved->generator = default_generator_of(input.device());
    saved->rng_state = generator_state(saved->generator);
    saved->autocast = cuda_autocast_active();
    static const torch::Tensor anchor = torch::empty({0}, torch::requires_grad());
    return CheckpointFunction::apply(input, anchor, saved);
}

}  // namespace crucible::engine
