#pragma once
// LoRA (SPECS.md "LoRA"): y = W x + b + scale · B(A(dropout(x))), A: r×in (Kaiming-uniform,
// a = √5), B: out×r (zero), scale = alpha/r or alpha/√r (rsLoRA). The adapter's sub-modules are
// named `lora_A` / `lora_B` with a `weight` each, so parameter names follow the PEFT layout.
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/lora_options.h"

namespace crucible::llm {

// The shared LoRA options (rank, alpha, dropout, rsLoRA; core/engine/lora_options.h) and the
// projections they apply to.
struct LoraSpec : engine::LoraOptions {
    LoraSpec() { alpha = 16; }                             // PEFT's default for Llama (rank 8)
    std::vector<std::string> targets{"q_proj", "v_proj"};  // PEFT's defaults for Llama

    // Throws InputError naming the option for r < 1, alpha <= 0, dropout outside [0, 1), an
    // empty or unknown target list (known: q_proj k_proj v_proj o_proj gate_proj up_proj
    // down_proj; the short forms q k v o gate up down are accepted and normalized).
    void validate();
};

// The projection names LoRA can target, in model order.
const std::vector<std::string>& lora_target_names();

struct LoraLinearImpl : torch::nn::Module {
    LoraLinearImpl(std::int64_t in_features, std::int64_t out_features, bool bias);

    torch::Tensor forward(const torch::Tensor& x);
    // Adds an adapter (replacing any previous one); freezes the base weight and bias.
    void add_adapter(std::int64_t r, double scale, double dropout);
    bool has_adapter() const { return !lora_A.is_empty(); }
    // W + scale·B·A (the base weight when there is no adapter).
    torch::Tensor merged_weight() const;
    // Folds the adapter into the weight and removes it.
    void merge();

    std::int64_t in_features, out_features;
    torch::Tensor weight, bias;
    torch::nn::Linear lora_A{nullptr}, lora_B{nullptr};
    torch::nn::Dropout lora_dropout{nullptr};
    double scale = 0;
};
TORCH_MODULE(LoraLinear);

}  // namespace crucible::llm
