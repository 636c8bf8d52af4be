#pragma once
// The SD 1.x and SDXL UNet (diffusers UNet2DConditionModel with CrossAttnDownBlock2D /
// DownBlock2D, UNetMidBlock2DCrossAttn, UpBlock2D / CrossAttnUpBlock2D; SDXL adds per-block head
// counts and transformer depths, linear projections and the "text_time" add embedding), parameter
// names as in diffusers so that a diffusers state dict loads name for name. Configurable down to
// the tiny test sizes.
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/json.h"
#include "plugins/sd_lora/nn.h"

namespace crucible::sd {

// SDXL's size and crop conditioning: per image, in pixels, the original height and width, the
// crop's top and left, and the target height and width, in that order.
inline constexpr std::int64_t kSdxlTimeIds = 6;

struct UNetConfig {
    std::int64_t in_channels = 4, out_channels = 4;
    std::vector<std::int64_t> block_out_channels{320, 640, 1280, 1280};
    // true: CrossAttnDownBlock2D (and the mirrored CrossAttnUpBlock2D); false: plain blocks.
    std::vector<bool> down_cross_attention{true, true, true, false};
    std::int64_t layers_per_block = 2;
    std::int64_t cross_attention_dim = 768;
    // Per block (the mirrored up block and, for the last, the mid block use the same): the head
    // count (diffusers' "attention_head_dim", a head count in SD 1.x and SDXL configs) and the
    // number of transformer blocks in each spatial transformer.
    std::vector<std::int64_t> attention_heads{8, 8, 8, 8};
    std::vector<std::int64_t> transformer_layers{1, 1, 1, 1};
    bool use_linear_projection = false;  // proj_in / proj_out are Linear (SDXL)
    // SDXL's "text_time" add embedding: each of the six time ids (original size, crop top-left,
    // target size) as `addition_time_embed_dim` sinusoids, after the pooled text embedding, into
    // a TimestepEmbedding (add_embedding) added to the time embedding. 0: none (SD 1.x).
    std::int64_t addition_time_embed_dim = 0;
    std::int64_t projection_class_embeddings_input_dim = 0;
    std::int64_t norm_num_groups = 32;
    double norm_eps = 1e-5;
    std::int64_t sample_size = 64;

    bool text_time_conditioning() const { return addition_time_embed_dim > 0; }
    // The pooled text embedding width the add embedding expects (0 without one).
    std::int64_t pooled_text_dim() const;

    // Reads a diffusers `config.json` object (unknown keys ignored, unsupported values such as
    // class_embed_type rejected naming the key).
    static UNetConfig from_diffusers_json(const Json& config, const std::string& where);
    Json to_diffusers_json() const;
    // SD 1.5 and SDXL base sizes / the tiny test config of diffusers (channels 32, 64).
    static UNetConfig sd15();
    static UNetConfig sdxl();
    static UNetConfig tiny();
    // SDXL's structure at tiny sizes (channels 32, 64; a plain first block; heads 2, 4; depths 1,
    // 2; linear projections; cross-attention width 64 = two encoders of 32; pooled width 32 and six
    // time ids of 8 sinusoids).
    static UNetConfig tiny_sdxl();
};

struct TimestepEmbeddingImpl;
struct UNetDownBlockImpl;
struct UNetMidBlockImpl;
struct UNetUpBlockImpl;

struct UNetImpl : torch::nn::Module {
    explicit UNetImpl(UNetConfig config);
    // sample [B, in, H, W], timesteps [B] (or a scalar), context [B, T, cross_attention_dim]
    // -> predicted noise [B, out, H, W]. With the text_time add embedding (SDXL) also
    // text_embeds [B, pooled_text_dim()] and time_ids [B, 6]; without it they must be undefined.
    torch::Tensor forward(const torch::Tensor& sample, const torch::Tensor& timesteps,
                          const torch::Tensor& context, const torch::Tensor& text_embeds = {},
                          const torch::Tensor& time_ids = {});
    UNetConfig config;
    // Recompute the ResNets and spatial transformers in backward instead of keeping their
    // activations (block_checkpoint.h); only while gradients are recorded.
    bool gradient_checkpointing = false;
    Conv2d conv_in{nullptr}, conv_out{nullptr};
    std::shared_ptr<TimestepEmbeddingImpl> time_embedding, add_embedding;
    torch::nn::ModuleList down_blocks{nullptr}, up_blocks{nullptr};
    std::shared_ptr<UNetMidBlockImpl> mid_block;
    GroupNorm conv_norm_out{nullptr};
};
TORCH_MODULE(UNet);

}  // namespace crucible::sd
