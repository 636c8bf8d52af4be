#pragma once
// A Llama-family decoder (SPECS.md "Llama-family decoder"): pre-norm blocks with RMSNorm (fp32),
// rotary embeddings in the Hugging Face layout (rotate_half, cat(freqs, freqs); `llama3`
// rope_scaling), grouped-query attention, SwiGLU MLP, optional q/k/v biases (Qwen2), optional
// per-head RMSNorm of queries and keys before the rotary embedding (Qwen3), tied or untied head.
// Module and parameter names follow the Hugging Face checkpoint names
// (`model.layers.0.self_attn.q_proj.weight`), so state dicts map one to one. Every projection
// is a LoraLinear; LoRA adapters are switched on per target module (plugins/llm_lora/lora.h).
#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/json.h"
#include "plugins/llm_lora/lora.h"

namespace crucible::llm {

struct RopeScaling {
    std::string type;  // "" (none) or "llama3"
    double factor = 1.0;
    double low_freq_factor = 1.0;
    double high_freq_factor = 4.0;
    std::int64_t original_max_position_embeddings = 8192;
};

struct LlamaConfig {
    std::int64_t vocab_size = 32000;
    std::int64_t hidden_size = 4096;
    std::int64_t intermediate_size = 11008;
    std::int64_t num_hidden_layers = 32;
    std::int64_t num_attention_heads = 32;
    std::int64_t num_key_value_heads = 32;
    std::int64_t head_dim = 0;  // 0: hidden_size / num_attention_heads
    std::int64_t max_position_embeddings = 2048;
    double rms_norm_eps = 1e-6;
    double rope_theta = 10000.0;
    RopeScaling rope_scaling;
    bool tie_word_embeddings = false;
    bool attention_bias = false;  // q/k/v biases (Qwen2)
    bool qk_norm = false;         // RMSNorm over each head of q and k (Qwen3: q_norm, k_norm)
    std::string model_type = "llama";

    std::int64_t head_size() const {
        return head_dim > 0 ? head_dim : hidden_size / num_attention_heads;
    }
    // Throws InputError(where, ...) naming the field for impossible values (zero sizes, heads
    // that do not divide, ...).
    void validate(const std::string& where) const;
    // Hugging Face config.json. Refuses architectures other than Llama-family decoders
    // (llama, mistral without sliding window, qwen2, qwen3) with a message naming model_type.
    static LlamaConfig from_hf_json(const Json& json, const std::string& where);
    Json to_hf_json() const;
};

// Keys and values of the positions already seen, per layer ([batch, kv_heads, time, head]).
struct KvCache {
    std::vector<torch::Tensor> keys, values;
    std::int64_t length() const { return keys.empty() || !keys[0].defined() ? 0 : keys[0].size(2); }
};

// Attention implementation: the fused kernel (scaled_dot_product_attention: flash or
// memory-efficient attention on CUDA) or the plain softmax(QK^T/sqrt(d))V in fp32, kept as the
// reference the fused one is tested against. Auto is the fused kernel.
enum class AttentionKernel { Auto, Fused, Plain };

struct RmsNormImpl : torch::nn::Module {
    RmsNormImpl(std::int64_t dim, double eps);
    torch::Tensor forward(const torch::Tensor& x);
    torch::Tensor weight;
    double eps;
};
TORCH_MODULE(RmsNorm);

// What the attention of every layer shares in one forward pass, built once by the model.
struct AttentionContext {
    torch::Tensor cos, sin;  // rotary [T, head / 2] (rotary.h), in the model's dtype
    torch::Tensor mask;      // causal, true = hidden, [T, past + T]; undefined when not needed
    std::int64_t past = 0;   // tokens already in the KV cache
    bool fused = true;       // the fused kernel, else the plain formula
};

struct LlamaAttentionImpl : torch::nn::Module {
    explicit LlamaAttentionImpl(const LlamaConfig& config, WeightInit init = WeightInit::Random);
    // x [B, T, hidden]; cache entries are replaced by the extended ones.
    torch::Tensor forward(const torch::Tensor& x, const AttentionContext& ctx,
                          torch::Tensor* cache_k, torch::Tensor* cache_v);
    LlamaConfig config;
    LoraLinear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
    RmsNorm q_norm{nullptr}, k_norm{nullptr};  // config.qk_norm only
};
TORCH_MODULE(LlamaAttention);

struct LlamaMlpImpl : torch::nn::Module {
    explicit LlamaMlpImpl(const LlamaConfig& config, WeightInit init = WeightInit::Random);
    torch::Tensor forward(const torch::Tensor& x);
    LoraLinear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(LlamaMlp);

struct LlamaDecoderLayerImpl : torch::nn::Module {
    explicit LlamaDecoderLayerImpl(const LlamaConfig& config, WeightInit init = WeightInit::Random);
    torch::Tensor forward(const torch::Tensor& x, const AttentionContext& ctx,
                          torch::Tensor* cache_k, torch::Tensor* cache_v);
    RmsNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
    LlamaAttention self_attn{nullptr};
    LlamaMlp mlp{nullptr};
};
TORCH_MODULE(LlamaDecoderLayer);

struct LlamaBackboneImpl : torch::nn::Module {
    explicit LlamaBackboneImpl(const LlamaConfig& config, WeightInit init = WeightInit::Random);
    torch::nn::Embedding embed_tokens{nullptr};
    torch::nn::ModuleList layers{nullptr};
    RmsNorm norm{nullptr};
};
TORCH_MODULE(LlamaBackbone);

// The causal language model: `model.*` (backbone) and `lm_head` (absent when tied).
struct LlamaForCausalLmImpl : torch::nn::Module {
    explicit LlamaForCausalLmImpl(const LlamaConfig& config, WeightInit init = WeightInit::Random);

    // tokens [B, T] int64 -> logits [B, T, vocab] (fp32). With a cache, the tokens continue
    // the cached positions and the cache grows by T.
    torch::Tensor forward(const torch::Tensor& tokens, KvCache* cache = nullptr);
    // Mean cross-entropy of next-token prediction; `labels` [B, T] with -100 where no loss is
    // taken (prompt, padding). Labels are the tokens themselves, shifted inside. The head and
    // the loss run fused (linear_cross_entropy.h): the [B, T, vocab] logits are never kept.
    torch::Tensor loss(const torch::Tensor& tokens, const torch::Tensor& labels);

    // Every projection of the given kinds ("q_proj", "k_proj", ... "down_proj") gets a LoRA
    // adapter; returns the number of adapted modules. Base weights are frozen (requires_grad
    // false) and only the adapters train.
    int add_lora(const LoraSpec& spec);
    // Folds every adapter into its base weight and removes it.
    void merge_lora();
    // QLoRA: every decoder projection's base weight becomes NF4 codes (LoraLinear::quantize_nf4);
    // embeddings, norms and the head stay as they are. Returns the projections' weight bytes
    // {before, after}.
    std::pair<std::int64_t, std::int64_t> quantize_nf4();
    // (HF-style name of the projection, module), for every projection.
    std::vector<std::pair<std::string, LoraLinear>> projections();

    // Base-model tensors by Hugging Face name (no LoRA tensors; no lm_head when tied).
    std::map<std::string, torch::Tensor> base_state_dict();

    LlamaConfig config;
    AttentionKernel kernel = AttentionKernel::Auto;
    // Recompute each decoder layer in backward instead of keeping its activations (training
    // without a KV cache only): activation memory drops to one tensor per layer.
    bool gradient_checkpointing = false;
    LlamaBackbone model{nullptr};
    torch::nn::Linear lm_head{nullptr};

  private:
    // The final norm's output [B, T, hidden], before the head.
    torch::Tensor hidden_states(const torch::Tensor& tokens, KvCache* cache);
    const torch::Tensor& head_weight();

    torch::Tensor inv_freq_;
};
TORCH_MODULE(LlamaForCausalLm);

// The rotary inverse frequencies for a config ([head/2], fp32), with llama3 scaling applied.
torch::Tensor rope_inv_freq(const LlamaConfig& config);

}  // namespace crucible::llm
