#pragma once
// Loading and saving Llama-family weights:
// - llama2.c `.bin` files, legacy (v0) layout: 7 int32 (dim, hidden_dim, n_layers, n_heads,
//   n_kv_heads, vocab_size — negative when the classifier is not shared — max_seq_len), then
//   fp32 tensors in a fixed order. Meta's interleaved rotary layout: the rows of wq and wk are
//   permuted to the Hugging Face layout on load (SPECS.md).
// - Hugging Face folders: config.json + model.safetensors or model.safetensors.index.json with
//   its shards; F32/F16/BF16 tensors are converted to the model's dtype.
// Every tensor is checked by name and shape; a missing, unexpected or mis-shaped tensor is an
// InputError that names it.
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "plugins/llm_lora/llama_model.h"

namespace crucible::llm {

// Tensors of a llama2.c file by Hugging Face name (rotary rows already permuted).
std::map<std::string, torch::Tensor> read_llama2c_tensors(const std::filesystem::path& path,
                                                          LlamaConfig* config = nullptr);

// The base tensors (by Hugging Face name) and the config of `path`: a Hugging Face folder
// (config.json + safetensors) or a llama2.c .bin file. InputError naming `path` otherwise.
std::map<std::string, torch::Tensor> read_base_model(const std::filesystem::path& path,
                                                     LlamaConfig& config);
// The config of a Hugging Face folder or a llama2.c file, without reading any weight.
LlamaConfig read_base_config(const std::filesystem::path& path);

// Where and how load_base_model puts the weights.
struct BaseModelLoad {
    torch::Device device = torch::kCPU;
    torch::ScalarType dtype = torch::kFloat32;
    // QLoRA: each decoder projection becomes NF4 codes as soon as its weight is read.
    bool nf4 = false;
};

// A Hugging Face folder or a llama2.c file, whichever `path` is, built tensor by tensor: the
// model starts without weights, and each tensor is copied out of its memory-mapped shard,
// converted to `how.dtype` on `how.device` (and quantized with `how.nf4`) before the next is
// read. Host memory holds one tensor beyond the model's own (none of it when the device is a
// GPU), never a second copy of the model. Checked as assign_base_weights checks.
LlamaForCausalLm load_base_model(const std::filesystem::path& path, const BaseModelLoad& how = {});
// Every tensor of the folder's safetensors file(s), by name (the index's weight_map is checked:
// each named tensor must be in the shard it names).
std::map<std::string, torch::Tensor> read_hf_tensors(const std::filesystem::path& folder);

// Copies `tensors` into the model's base parameters. Strict: every base parameter must be
// present with the exact shape; names the model does not have are refused, except
// `*.rotary_emb.inv_freq` and a tied model's `lm_head.weight`. `where` names the source.
void assign_base_weights(LlamaForCausalLmImpl& model,
                         const std::map<std::string, torch::Tensor>& tensors,
                         const std::string& where);

// Meta (interleaved pairs) -> Hugging Face (halves) row order of a q or k weight [heads*d, in],
// and back.
torch::Tensor permute_rotary_to_hf(const torch::Tensor& w, std::int64_t heads);
torch::Tensor permute_rotary_to_meta(const torch::Tensor& w, std::int64_t heads);

// Writes a Hugging Face folder (config.json, model.safetensors or shards + index) with every
// adapter merged into its base weight. `dtype` F32, F16 or BF16; shards hold at most
// `max_shard_bytes` (0: one file).
void save_hf_folder(LlamaForCausalLmImpl& model, const std::filesystem::path& folder,
                    torch::ScalarType dtype = torch::kFloat32, std::uint64_t max_shard_bytes = 0);

}  // namespace crucible::llm
