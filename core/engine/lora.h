#pragma once
// LoRA, once for both LoRA tasks (SPECS.md "LoRA"): an adapter's options and scale, its
// matrices and arithmetic (y = W x + b + scale · B(A(dropout(x))), A: r×in Kaiming-uniform with
// a = √5, B: out×r zero, scale = alpha/r or alpha/√r for rsLoRA), merging into a base weight, the
// two parameter layouts the tasks' files use, and the PEFT adapter writer. The tasks keep only
// what is theirs: which layers of which model carry an adapter, and how those layers are found
// (a Llama projection owns its adapter; SD's network installs adapters into the UNet and the text
// encoder, and writes the kohya file).
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/base/json.h"

namespace crucible::engine {

struct LoraOptions {
    std::int64_t rank = 8;
    double alpha = 8;
    double dropout = 0;
    bool rslora = false;  // rank-stabilized: scale alpha/√rank instead of alpha/rank

    double scale() const { return lora_scale(alpha, rank, rslora); }
    static double lora_scale(double alpha, std::int64_t rank, bool rslora);
};

// One adapter: A ("down", r×in, or r×in×1×1 on a 1x1 convolution) and B ("up", out×r[×1×1])
// with its scale. The tensors are the owner's registered parameters (see register_lora), so
// moving or loading the owner moves and loads these.
struct LoraWeights {
    torch::Tensor down, up;
    double alpha = 0, scale = 0, dropout = 0;
    std::int64_t rank = 0;

    bool defined() const { return down.defined(); }
    // A new adapter on a layer of `in` → `out` features: A Kaiming-uniform, B zero, on `device`.
    // Adapters are fp32 even on bf16/fp16 base weights (their updates are small against the
    // weights; the base layer's precision would swallow them).
    static LoraWeights create(std::int64_t in, std::int64_t out, const LoraOptions& options,
                              bool conv1x1, torch::Device device);

    // The base layer's output `y` of input `x` plus this adapter's: for a Linear (x [..., in],
    // y [..., out]) and for a 1x1 convolution (NCHW). Dropout applies only when `training`.
    torch::Tensor add_to_linear(const torch::Tensor& y, const torch::Tensor& x,
                                bool training) const;
    torch::Tensor add_to_conv1x1(const torch::Tensor& y, const torch::Tensor& x,
                                 bool training) const;
    // scale·B·A in fp32, shaped like the base weight ([out, in] or [out, in, 1, 1]).
    torch::Tensor delta() const;
    // The base weight with this adapter folded in, in the weight's dtype and device (computed
    // in fp32).
    torch::Tensor merged(const torch::Tensor& weight) const;
    // A new alpha (a file's): the scale follows.
    void set_alpha(double new_alpha, bool rslora);
};

// Where an adapter's two matrices appear among its owner's parameters:
// - Peft: child modules lora_A and lora_B with a `weight` each, inside the adapted layer, so a
//   Llama's parameter names read `...q_proj.lora_A.weight` as PEFT's do;
// - Network: parameters `down` and `up` of an adapter module that a network registers under the
//   layer's kohya key (`lora_unet_..._to_q.down`).
enum class LoraLayout { Peft, Network };
void register_lora(torch::nn::Module& owner, LoraWeights& weights, LoraLayout layout);
// Removes a PEFT-layout adapter from its layer (a network's adapters live as long as it does).
void unregister_lora(torch::nn::Module& owner);

// A module with one parameter `weight`: how the PEFT layout names A and B.
struct LoraMatrixImpl : torch::nn::Module {
    explicit LoraMatrixImpl(const torch::Tensor& w) { weight = register_parameter("weight", w); }
    torch::Tensor weight;
};
TORCH_MODULE(LoraMatrix);

// adapter_config.json of a PEFT LoRA adapter on `targets` (module names) of `base_model`.
// `task_type` is PEFT's ("CAUSAL_LM" for a language model), or empty for none (a UNet or a text
// encoder saved on its own).
Json peft_lora_config(const LoraOptions& options, const std::vector<std::string>& targets,
                      const std::string& base_model, const std::string& task_type);

// The PEFT name of an adapter matrix: base_model.model.<module>.lora_A.weight (`which` 'A') or
// .lora_B.weight ('B').
std::string peft_lora_tensor_name(const std::string& module, char which);
// The adapters by module path, under their PEFT names (CPU, contiguous, their dtype).
std::map<std::string, torch::Tensor> peft_lora_tensors(
    const std::vector<std::pair<std::string, const LoraWeights*>>& adapters);
// Writes `folder`/adapter_model.safetensors ({"format": "pt"} metadata) and adapter_config.json.
// Throws Error when `tensors` is empty.
void save_peft_lora(const std::filesystem::path& folder,
                    const std::map<std::string, torch::Tensor>& tensors, const Json& config);

}  // namespace crucible::engine
