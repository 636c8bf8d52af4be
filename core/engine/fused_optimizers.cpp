#include "core/engine/fused_optimizers.h"

#include <map>
#include <tuple>
#include <vector>

namespace crucible::engine {

namespace {

// One call of a fused Adam kernel: tensors of one device and dtype (what it requires).
struct FusedLists {
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
};

// One call of the fused SGD kernel.
struct SgdLists {
    std::vector<torch::Tensor> params, grads, buffers;
};

// The parameters one fused call may take together.
std::tuple<int, int, int> device_and_dtype(const torch::Tensor& p) {
    return {static_cast<int>(p.device().type()), static_cast<int>(p.device().index()),
            static_cast<int>(p.scalar_type())};
}

// The optional closure, run with gradients on as torch::optim's steps run it.
torch::Tensor run_closure(const torch::optim::Optimizer::LossClosure& closure) {
    if (!closure) return {};
    at::AutoGradMode enable_grad(true);
    return closure();
}

// Collects a group's parameters that have gradients, creating and advancing their state as
// torch::optim's step does (state made on the first step, `step` counted before the update).
template <class State>
std::map<std::tuple<int, int, int>, FusedLists> collect(
    torch::optim::OptimizerParamGroup& group,
    ska::flat_hash_map<void*, std::unique_ptr<torch::optim::OptimizerParamState>>& states) {
    std::map<std::tuple<int, int, int>, FusedLists> out;
    for (auto& p : group.params()) {
        if (!p.grad().defined()) continue;
        TORCH_CHECK(!p.grad().is_sparse(), "Adam does not support sparse gradients");
        auto& slot = states[p.unsafeGetTensorImpl()];
        if (!slot) {
            auto fresh = std::make_unique<State>();
            fresh->step(0);
            fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
            fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
            slot = std::move(fresh);
        }
        auto& state = static_cast<State&>(*slot);
        state.step(state.step() + 1);
        FusedLists& lists = out[device_and_dtype(p)];
        lists.params.push_back(p);
        lists.grads.push_back(p.grad());
        lists.exp_avgs.push_back(state.exp_avg());
        lists.exp_avg_sqs.push_back(state.exp_avg_sq());
        // The kernel reads the step count from a float tensor on the parameter's device.
        lists.steps.push_back(
            torch::full({}, static_cast<double>(state.step()), p.options().dtype(torch::kFloat32)));
    }
    return out;
}

template <class Options, class State, class Kernel>
torch::Tensor fused_step(torch::optim::Optimizer& optimizer,
                         const torch::optim::Optimizer::LossClosure& closure, Kernel kernel) {
    torch::Tensor loss = run_closure(closure);
    torch::NoGradGuard no_grad;
    for (auto& group : optimizer.param_groups()) {
        const auto& o = static_cast<const Options&>(group.options());
        const auto [beta1, beta2] = o.betas();
        for (auto& [key, l] : collect<State>(group, optimizer.state()))
            kernel(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs,
                   /*max_exp_avg_sqs=*/at::TensorList(), l.steps, o.lr(), beta1, beta2,
                   o.weight_decay(), o.eps(), /*amsgrad=*/false,
                   /*maximize=*/false, /*grad_scale=*/std::nullopt, /*found_inf=*/std::nullopt);
    }
    return loss;
}

template <class Options>
bool any_amsgrad(torch::optim::Optimizer& optimizer) {
    for (auto& group : optimizer.param_groups())
        if (static_cast<const Options&>(group.options()).amsgrad()) return true;
    return false;
}

}  // namespace

torch::Tensor FusedAdamW::step(LossClosure closure) {
    using Options = torch::optim::AdamWOptions;
    if (any_amsgrad<Options>(*this)) return torch::optim::AdamW::step(std::move(closure));
    return fused_step<Options, torch::optim::AdamWParamState>(
        *this, closure, [](auto&&... args) { at::_fused_adamw_(args...); });
}

torch::Tensor FusedSgd::step(LossClosure closure) {
    using Options = torch::optim::SGDOptions;
    for (auto& group : param_groups())
        if (static_cast<const Options&>(group.options()).momentum() == 0)
            return torch::optim::SGD::step(std::move(closure));
    torch::Tensor loss = run_closure(closure);
    torch::NoGradGuard no_grad;
    for (auto& group : param_groups()) {
        const auto& o = static_cast<const Options&>(group.options());
        // Keyed by device, dtype and whether the momentum buffer is new: the kernel's first step
        // copies the gradient into the buffer, as torch::optim's SGD clones it.
        std::map<std::tuple<int, int, int, bool>, SgdLists> calls;
        for (auto& p : group.params()) {
            if (!p.grad().defined()) continue;
            TORCH_CHECK(!p.grad().is_sparse(), "SGD: sparse gradients are not supported");
            auto& slot = state()[p.unsafeGetTensorImpl()];
            const bool first = !slot;
            if (first) {
                auto fresh = std::make_unique<torch::optim::SGDParamState>();
                fresh->momentum_buffer(torch::empty_like(p, torch::MemoryFormat::Preserve));
                slot = std::move(fresh);
            }
            SgdLists& l = calls[std::tuple_cat(device_and_dtype(p), std::make_tuple(first))];
            l.params.push_back(p);
            l.grads.push_back(p.grad());
            l.buffers.push_back(static_cast<torch::optim::SGDParamState&>(*slot).momentum_buffer());
        }
        for (auto& [key, l] : calls)
            at::_fused_sgd_(l.params, l.grads, l.buffers, o.weight_decay(), o.momentum(), o.lr(),
                            o.dampening(), o.nesterov(), /*maximize=*/false,
                            /*is_first_step=*/std::get<3>(key));
    }
    return loss;
}

torch::Tensor FusedAdam::step(LossClosure closure) {
    using Options = torch::optim::AdamOptions;
    if (any_amsgrad<Options>(*this)) return torch::optim::Adam::step(std::move(closure));
    return fused_step<Options, torch::optim::AdamParamState>(
        *this, closure, [](auto&&... args) { at::_fused_adam_(args...); });
}

}  // namespace crucible::engine
