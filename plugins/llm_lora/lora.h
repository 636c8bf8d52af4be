#pragma once
// LoRA on a Llama (SPECS.md "LoRA"): which projections carry an adapter, and the projection
// that owns one. The adapter itself (matrices, arithmetic, merging) is the shared one of
// core/engine/lora.h, registered in the PEFT layout (`<projection>.lora_A.weight`).
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/lora.h"
#include "core/engine/nf4.h"

namespace crucible::llm {

// The shared LoRA options (rank, alpha, dropout, rsLoRA; core/engine/lora.h) and the
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

// How a new model's weights start: random (LibTorch's Linear init: tests and benchmarks) or
// uninitialized for a loader that overwrites every one. Uninitialized CPU storage is never
// written, so it takes no memory until the loader replaces it.
enum class WeightInit { Random, Empty };

struct LoraLinearImpl : torch::nn::Module {
    LoraLinearImpl(std::int64_t in_features, std::int64_t out_features, bool bias,
                   WeightInit init = WeightInit::Random);

    torch::Tensor forward(const torch::Tensor& x);
    // Adds an adapter (replacing any previous one); freezes the base weight and bias.
    void add_adapter(const engine::LoraOptions& options);
    bool has_adapter() const { return lora.defined(); }
    // W + scale·B·A (the base weight when there is no adapter).
    torch::Tensor merged_weight() const;
    // Folds the adapter into the weight and removes it (a quantized base is dequantized first:
    // the merged layer is a plain one again).
    void merge();

    // QLoRA: the base weight is replaced by its NF4 codes (core/engine/nf4.h) on its device and
    // its full-precision storage is released (`weight` becomes an empty tensor); forward and
    // backward dequantize on the fly. Any adapter stays as it is.
    void quantize_nf4();
    // The same from a dense weight given apart (a loader's view of the file, on this layer's
    // device), which this layer never holds: `dtype` is what dequantizing gives back.
    void quantize_nf4_from(const torch::Tensor& dense, torch::ScalarType dtype);
    // Allocates the NF4 storage now, on `device`, for a quantize_nf4 after the weight is loaded
    // (Nf4Tensor::allocate says why a loader does this first).
    void reserve_nf4(torch::Device device);
    bool is_quantized() const { return nf4.defined(); }
    // The base weight as forward uses it (dequantized when quantized).
    torch::Tensor base_weight() const;

    std::int64_t in_features, out_features;
    torch::Tensor weight, bias;
    engine::Nf4Tensor nf4;
    engine::LoraWeights lora;  // lora.down is lora_A.weight, lora.up lora_B.weight

  private:
    engine::Nf4Tensor reserved_nf4_;
};
TORCH_MODULE(LoraLinear);

}  // namespace crucible::llm
