#pragma once
// The SD 1.x UNet (diffusers UNet2DConditionModel with CrossAttnDownBlock2D / DownBlock2D,
// UNetMidBlock2DCrossAttn, UpBlock2D / CrossAttnUpBlock2D), parameter names as in diffusers so
// that a diffusers state dict loads name for name. Configurable down to the tiny test sizes.
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/json.h"
#include "plugins/sd_lora/nn.h"

namespace crucible::sd {

struct UNetConfig {
    std::int64_t in_channels = 4, out_channels = 4;
    std::vector<std::int64_t> block_out_channels{320, 640, 1280, 1280};
    // true: CrossAttnDownBlock2D (and the mirrored CrossAttnUpBlock2D); false: plain blocks.
    std::vector<bool> down_cross_attention{true, true, true, false};
    std::int64_t layers_per_block = 2;
    std::int64_t cross_attention_dim = 768;
    std::int64_t attention_heads = 8;  // diffusers' "attention_head_dim" (a head count in SD1)
    std::int64_t norm_num_groups = 32;
    double norm_eps = 1e-5;
    std::int64_t sample_size = 64;

    // Reads a diffusers `config.json` object (unknown keys ignored, unsupported values such as
    // use_linear_projection=true rejected naming the key).
    static UNetConfig from_diffusers_json(const Json& config, const std::string& where);
    Json to_diffusers_json() const;
    // SD 1.5 sizes / the tiny test config of diffusers (channels 32, 64).
    static UNetConfig sd15();
    static UNetConfig tiny();
};

struct TimestepEmbeddingImpl;
struct UNetDownBlockImpl;
struct UNetMidBlockImpl;
struct UNetUpBlockImpl;

struct UNetImpl : torch::nn::Module {
    explicit UNetImpl(UNetConfig config);
    // sample [B, in, H, W], timesteps [B] (or a scalar), context [B, T, cross_attention_dim]
    // -> predicted noise [B, out, H, W].
    torch::Tensor forward(const torch::Tensor& sample, const torch::Tensor& timesteps,
                          const torch::Tensor& context);
    UNetConfig config;
    // Recompute the ResNets and spatial transformers in backward instead of keeping their
    // activations (block_checkpoint.h); only while gradients are recorded.
    bool gradient_checkpointing = false;
    Conv2d conv_in{nullptr}, conv_out{nullptr};
    std::shared_ptr<TimestepEmbeddingImpl> time_embedding;
    torch::nn::ModuleList down_blocks{nullptr}, up_blocks{nullptr};
    std::shared_ptr<UNetMidBlockImpl> mid_block;
    GroupNorm conv_norm_out{nullptr};
};
TORCH_MODULE(UNet);

}  // namespace crucible::sd
