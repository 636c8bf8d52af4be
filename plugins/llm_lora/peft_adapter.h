#pragma once
// PEFT-layout LoRA adapters (SPECS.md "LoRA"): a folder with adapter_config.json and
// adapter_model.safetensors whose keys are
// `base_model.model.model.layers.{i}.self_attn.{q,k,v,o}_proj.lora_{A,B}.weight` and
// `...mlp.{gate,up,down}_proj.lora_{A,B}.weight`, A [r, in], B [out, r].
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <string>

#include "core/base/json.h"
#include "plugins/llm_lora/llama_model.h"
#include "plugins/llm_lora/lora.h"

namespace crucible::llm {

// The adapter tensors of a model under their PEFT names (CPU, contiguous, model dtype).
std::map<std::string, torch::Tensor> peft_adapter_tensors(LlamaForCausalLmImpl& model);
// adapter_config.json for a LoRA spec.
Json peft_adapter_config(const LoraSpec& spec, const std::string& base_model);

// Writes adapter_config.json + adapter_model.safetensors ({"format":"pt"} metadata) into
// `folder` (created). Throws Error when the model has no adapter.
void save_peft_adapter(LlamaForCausalLmImpl& model, const LoraSpec& spec,
                       const std::filesystem::path& folder, const std::string& base_model);

// Reads an adapter folder: adds LoRA to `model` per its config and loads the tensors, strictly
// (every adapted module's A and B with exact shapes; unknown keys refused, naming the key).
LoraSpec load_peft_adapter(LlamaForCausalLmImpl& model, const std::filesystem::path& folder);

}  // namespace crucible::llm
