#include "plugins/llm_lora/lora.h"

#include <algorithm>
#include <cmath>

#include "core/base/error.h"

namespace crucible::llm {

const std::vector<std::string>& lora_target_names() {
    static const std::vector<std::string> names{"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                                "gate_proj", "up_proj", "down_proj"};
    return names;
}

void LoraSpec::validate() {
    if (rank < 1) throw InputError("lora_r", "must be at least 1, got " + std::to_string(rank));
    if (!(alpha > 0)) throw InputError("lora_alpha", "must be positive");
    if (!(dropout >= 0 && dropout < 1)) throw InputError("lora_dropout", "must be in [0, 1)");
    if (targets.empty()) throw InputError("lora_targets", "names no module");
    std::vector<std::string> normalized;
    for (std::string t : targets) {
        if (t.find("_proj") == std::string::npos) t += "_proj";
        const auto& known = lora_target_names();
        if (std::find(known.begin(), known.end(), t) == known.end())
            throw InputError("lora_targets", "unknown module '" + t +
                                                 "' (known: q k v o gate up down, with or "
                                                 "without _proj)");
        if (std::find(normalized.begin(), normalized.end(), t) == normalized.end())
            normalized.push_back(t);
    }
    // Model order, so adapter files and configs list targets the same way every time.
    std::vector<std::string> ordered;
    for (const auto& n : lora_target_names())
        if (std::find(normalized.begin(), normalized.end(), n) != normalized.end())
            ordered.push_back(n);
    targets = ordered;
}

LoraLinearImpl::LoraLinearImpl(std::int64_t in, std::int64_t out, bool with_bias)
    : in_features(in), out_features(out) {
    // The base weight's own init does not matter (loaders overwrite it); a Linear's default
    // keeps randomly initialized test models well conditioned.
    torch::nn::Linear init(torch::nn::LinearOptions(in, out).bias(with_bias));
    weight = register_parameter("weight", init->weight.detach().clone());
    if (with_bias) bias = register_parameter("bias", init->bias.detach().clone());
}

torch::Tensor LoraLinearImpl::forward(const torch::Tensor& x) {
    torch::Tensor y = torch::nn::functional::linear(x, weight, bias);
    if (has_adapter()) {
        // Adapters stay fp32 when the base weights are bf16 / fp16.
        torch::Tensor h = lora_dropout(x);
        if (h.scalar_type() != lora_A->weight.scalar_type()) h = h.to(lora_A->weight.scalar_type());
        const torch::Tensor a = lora_A(h);
        if (a.scalar_type() != y.scalar_type()) return y + (lora_B(a) * scale).to(y.scalar_type());
        // y + scale * (a B^T) in one GEMM: no scaled copy of the delta, no separate add.
        const auto out = y.size(-1);
        return at::addmm(y.reshape({-1, out}), a.reshape({-1, a.size(-1)}), lora_B->weight.t(),
                         /*beta=*/1, /*alpha=*/scale)
            .view(y.sizes());
    }
    return y;
}

void LoraLinearImpl::add_adapter(std::int64_t r, double s, double dropout) {
    if (has_adapter()) {
        unregister_module("lora_A");
        unregister_module("lora_B");
        unregister_module("lora_dropout");
    }
    const bool low =
        weight.scalar_type() == torch::kBFloat16 || weight.scalar_type() == torch::kFloat16;
    const auto opts = torch::TensorOptions()
                          .dtype(low ? torch::kFloat32 : weight.scalar_type())
                          .device(weight.device());
    // LibTorch's Linear initializes its weight Kaiming-uniform with a = √5: exactly LoRA's A.
    lora_A = register_module(
        "lora_A", torch::nn::Linear(torch::nn::LinearOptions(in_features, r).bias(false)));
    lora_B = register_module(
        "lora_B", torch::nn::Linear(torch::nn::LinearOptions(r, out_features).bias(false)));
    lora_dropout = register_module("lora_dropout", torch::nn::Dropout(dropout));
    {
        torch::NoGradGuard no_grad;
        lora_B->weight.zero_();
    }
    lora_A->to(opts.device(), opts.dtype().toScalarType());
    lora_B->to(opts.device(), opts.dtype().toScalarType());
    scale = s;
    weight.set_requires_grad(false);
    if (bias.defined()) bias.set_requires_grad(false);
}

torch::Tensor LoraLinearImpl::merged_weight() const {
    if (!has_adapter()) return weight.detach().clone();
    torch::NoGradGuard no_grad;
    const torch::Tensor delta =
        torch::matmul(lora_B->weight.to(torch::kFloat32), lora_A->weight.to(torch::kFloat32)) *
        scale;
    return (weight.to(torch::kFloat32) + delta).to(weight.dtype());
}

void LoraLinearImpl::merge() {
    if (!has_adapter()) return;
    const torch::Tensor merged = merged_weight();
    {
        torch::NoGradGuard no_grad;
        weight.copy_(merged);
    }
    unregister_module("lora_A");
    unregister_module("lora_B");
    unregister_module("lora_dropout");
    lora_A = nullptr;
    lora_B = nullptr;
    lora_dropout = nullptr;
    scale = 0;
}

}  // namespace crucible::llm
