#pragma once
// The CLIP text encoder of SD 1.x (Hugging Face CLIPTextModel layout: text_model.embeddings.*,
// text_model.encoder.layers.N.{self_attn.{q,k,v,out}_proj, layer_norm1/2, mlp.fc1/fc2},
// text_model.final_layer_norm): pre-LayerNorm transformer with a causal mask and quick_gelu.
#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "core/base/json.h"
#include "plugins/sd_lora/nn.h"

namespace crucible::sd {

struct ClipTextConfig {
    std::int64_t vocab_size = 49408;
    std::int64_t hidden_size = 768;
    std::int64_t intermediate_size = 3072;
    std::int64_t num_hidden_layers = 12;
    std::int64_t num_attention_heads = 12;
    std::int64_t max_position_embeddings = 77;
    bool quick_gelu = true;  // hidden_act "quick_gelu"; false: exact "gelu"
    double layer_norm_eps = 1e-5;

    static ClipTextConfig from_hf_json(const Json& config, const std::string& where);
    Json to_hf_json() const;
    static ClipTextConfig sd15();  // ViT-L/14 text tower
    static ClipTextConfig tiny();  // width 32, 2 layers, 4 heads, MLP 37, vocab 1000
};

struct ClipLayerImpl : torch::nn::Module {
    ClipLayerImpl(const ClipTextConfig& c);
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask);
    std::int64_t heads;
    bool quick_gelu;
    LayerNorm layer_norm1{nullptr}, layer_norm2{nullptr};
    Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, out_proj{nullptr};
    Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(ClipLayer);

struct ClipTextModelImpl : torch::nn::Module {
    explicit ClipTextModelImpl(ClipTextConfig config);
    // ids [B, T] (T <= max_position_embeddings) -> hidden states [B, T, hidden]. clip_skip 1 is
    // the last layer (SD 1.x); 2 takes the layer before it, both through final_layer_norm.
    torch::Tensor forward(const torch::Tensor& ids, int clip_skip = 1);
    ClipTextConfig config;
    // Recompute the encoder layers in backward instead of keeping their activations
    // (block_checkpoint.h); only while gradients are recorded (text-encoder LoRA training).
    bool gradient_checkpointing = false;
    Embedding token_embedding{nullptr}, position_embedding{nullptr};
    torch::nn::ModuleList layers{nullptr};
    LayerNorm final_layer_norm{nullptr};
};
TORCH_MODULE(ClipTextModel);

}  // namespace crucible::sd
