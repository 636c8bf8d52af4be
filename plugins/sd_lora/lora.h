#pragma once
// LoRA for SD 1.x (SPECS.md "LoRA"): the kohya default targets (every Linear and 1x1 conv of the
// UNet's spatial transformers: proj_in, proj_out, attn1/attn2 to_q/k/v/out.0, ff.net.0.proj,
// ff.net.2 — 192 modules in SD 1.5; text encoder q/k/v/out_proj, fc1, fc2 — 72), a network of
// adapters the base layers run (UNet and text encoder in one network: the kohya keys tell them
// apart), merging, and the kohya `.safetensors` layout
// (`<key>.lora_down.weight`, `<key>.lora_up.weight`, `<key>.alpha`) with `ss_*` metadata and
// `sshs_model_hash`; optionally the PEFT layout.
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/base/json.h"
#include "core/engine/lora.h"
#include "core/engine/param_groups.h"
#include "plugins/sd_lora/nn.h"
#include "plugins/sd_lora/unet.h"

namespace crucible::sd {

struct LoraTarget {
    std::string module;  // diffusers / Hugging Face module path
    std::string kohya;   // lora_unet_... / lora_te_...
    std::int64_t in = 0, out = 0;
    bool conv = false;  // 1x1 convolution
    std::shared_ptr<torch::nn::Module> layer;
};

// The kohya targets of a UNet / CLIP text model (prefix "lora_unet" / "lora_te"), module order.
// SD 1.x UNet keys follow the diffusers module names (lora_unet_down_blocks_0_attentions_0_...);
// SDXL's follow the original LDM names as kohya's SDXL trainer writes them
// (lora_unet_input_blocks_4_1_transformer_blocks_0_attn1_to_q). SDXL's text encoders take the
// prefixes "lora_te1" and "lora_te2".
std::vector<LoraTarget> unet_lora_targets(UNetImpl& unet);
std::vector<LoraTarget> text_encoder_lora_targets(torch::nn::Module& text_encoder,
                                                  const std::string& prefix = "lora_te");

// Rank, alpha, dropout and rsLoRA: the options both LoRA tasks share.
using engine::LoraOptions;

// The adapters of a set of targets, registered under their kohya keys (parameters "down", "up"),
// so the engine's optimizer, EMA, checkpoints and weight files see exactly the trainable LoRA.
// install() points the target layers at these adapters (several networks may exist for one base
// model, e.g. the trained one and its EMA copy; the last installed runs).
struct LoraNetworkImpl : torch::nn::Module {
    LoraNetworkImpl(std::vector<LoraTarget> targets, const LoraOptions& options);
    void install();
    void uninstall();
    // W += scale·B·A in every target layer, then uninstall (the base model now includes the LoRA).
    void merge_into_base();

    // kohya tensors: <key>.lora_down.weight [r, in(,1,1)], <key>.lora_up.weight [out, r(,1,1)],
    // <key>.alpha (0-d), in `dtype` (float32, float16 or bfloat16).
    std::map<std::string, torch::Tensor> kohya_state(
        torch::ScalarType dtype = torch::kFloat32) const;
    // Copies kohya tensors in; InputError names a missing key, a shape that differs, or a key
    // that belongs to no target (a LoRA for another model).
    void load_kohya_state(const std::map<std::string, torch::Tensor>& tensors,
                          const std::string& where);
    // PEFT layout: <folder>/adapter_model.safetensors (base_model.model.<module>.lora_A/B.weight)
    // and adapter_config.json, for the targets whose kohya key starts with `kohya_prefix` + "_"
    // (all when empty): one model per folder, as PEFT saves them.
    void save_peft(const std::filesystem::path& folder, const std::string& base_model,
                   const std::string& kohya_prefix = "") const;

    std::vector<LoraTarget> targets;
    std::vector<LoraAdapter> adapters;
    LoraOptions options;
};
TORCH_MODULE(LoraNetwork);

// The optimizer's parameter groups of a network (core/engine/param_groups.h), so UNet and text
// encoder train at learning rates of their own (kohya's unet_lr / text_encoder_lr): `unet`, the
// adapters whose kohya key starts with "lora_unet_", at `unet_lr_factor` × the run's learning
// rate, and `text_encoder` ("lora_te_", "lora_te1_", "lora_te2_") at `text_encoder_lr_factor`, only
// when the network has such adapters. Every adapter matrix is decayed (as kohya decays them all)
// and warms up from 0. Parameters in the network's order.
engine::ParamGroups lora_parameter_groups(LoraNetworkImpl& net, double unet_lr_factor,
                                          double text_encoder_lr_factor);

// Writes a kohya LoRA file: `metadata` (ss_* keys) plus sshs_model_hash, the SHA-256 of the bytes
// after the header. Returns the hash.
std::string save_kohya_lora(const std::filesystem::path& path,
                            const std::map<std::string, torch::Tensor>& tensors,
                            std::map<std::string, std::string> metadata);
// SHA-256 (hex) of a safetensors file's bytes after its header.
std::string safetensors_data_hash(const std::string& file_bytes);

}  // namespace crucible::sd
