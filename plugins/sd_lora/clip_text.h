#pragma once
// The CLIP text encoders of SD 1.x and SDXL (Hugging Face CLIPTextModel layout:
// text_model.embeddings.*, text_model.encoder.layers.N.{self_attn.{q,k,v,out}_proj,
// layer_norm1/2, mlp.fc1/fc2}, text_model.final_layer_norm; CLIPTextModelWithProjection adds
// text_projection): pre-LayerNorm transformer with a causal mask and quick_gelu or gelu.
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
    // The pooled output is the final-normed state at the first EOS token (at the largest id when
    // eos_token_id is transformers' legacy 2). -1: the vocabulary's last id (49407 in CLIP's).
    std::int64_t eos_token_id = -1;
    // CLIPTextModelWithProjection (SDXL's second encoder): text_projection [projection_dim,
    // hidden] without bias maps the pooled output. 0: CLIPTextModel, no projection.
    std::int64_t projection_dim = 0;

    static ClipTextConfig from_hf_json(const Json& config, const std::string& where);
    Json to_hf_json() const;
    static ClipTextConfig sd15();       // ViT-L/14 text tower (also SDXL's first encoder)
    static ClipTextConfig sdxl_bigg();  // OpenCLIP ViT-bigG/14 text tower, SDXL's second
    static ClipTextConfig tiny();       // width 32, 2 layers, 4 heads, MLP 37, vocab 1000
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

    // SDXL's conditioning: `penultimate` is the next-to-last layer's output without
    // final_layer_norm (the pipelines' hidden_states[-2]); `pooled` (only when asked, which runs
    // the last layer too) is the final-normed last layer at the EOS token, through
    // text_projection when the model has one.
    struct SdxlOutputs {
        torch::Tensor penultimate, pooled;
    };
    SdxlOutputs encode_sdxl(const torch::Tensor& ids, bool with_pooled);
    ClipTextConfig config;
    // Recompute the encoder layers in backward instead of keeping their activations
    // (block_checkpoint.h); only while gradients are recorded (text-encoder LoRA training).
    bool gradient_checkpointing = false;
    Embedding token_embedding{nullptr}, position_embedding{nullptr};
    torch::nn::ModuleList layers{nullptr};
    LayerNorm final_layer_norm{nullptr};
    Linear text_projection{nullptr};  // CLIPTextModelWithProjection only

  private:
    // Embeddings and the first `stop` layers (no final norm); `before_last`, when given, gets
    // the input of layer stop - 1.
    torch::Tensor run_layers(const torch::Tensor& ids, std::int64_t stop,
                             torch::Tensor* before_last = nullptr);
};
TORCH_MODULE(ClipTextModel);

}  // namespace crucible::sd
