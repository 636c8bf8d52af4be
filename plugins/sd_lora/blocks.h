#pragma once
// Building blocks shared by the SD UNet and VAE, with diffusers' parameter names: ResnetBlock2D,
// the spatial transformer (Transformer2DModel with BasicTransformerBlocks: self-attention,
// cross-attention, GEGLU feed-forward), the VAE's single-head spatial attention, down/up samplers
// and the sinusoidal timestep embedding.
#include <torch/torch.h>

#include <cstdint>
#include <optional>

#include "plugins/sd_lora/nn.h"

namespace crucible::sd {

// Sinusoidal embedding of `timesteps` ([B], any numeric dtype) into [B, dim] float:
// exponent_i = -ln(10000)·i/(half - shift); flip_sin_to_cos puts cos first.
torch::Tensor timestep_embedding(const torch::Tensor& timesteps, std::int64_t dim,
                                 bool flip_sin_to_cos = true, double shift = 0.0);

// norm1-SiLU-conv1 (+ time_emb_proj(SiLU(temb))) - norm2-SiLU-conv2, plus the (1x1 conv)
// shortcut when the channel counts differ. temb_channels 0: no time embedding (VAE).
struct ResnetBlockImpl : torch::nn::Module {
    ResnetBlockImpl(std::int64_t in, std::int64_t out, std::int64_t temb_channels,
                    std::int64_t groups, double eps);
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& temb = {});
    GroupNorm norm1{nullptr}, norm2{nullptr};
    Conv2d conv1{nullptr}, conv2{nullptr}, conv_shortcut{nullptr};
    Linear time_emb_proj{nullptr};
};
TORCH_MODULE(ResnetBlock);

// Multi-head attention with to_q/to_k/to_v and to_out.0 (diffusers Attention). Cross-attention
// when context_dim > 0 (keys/values from the text states). `bias` on q/k/v as in the VAE.
struct AttentionImpl : torch::nn::Module {
    AttentionImpl(std::int64_t query_dim, std::int64_t context_dim, std::int64_t heads,
                  std::int64_t head_dim, bool qkv_bias);
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& context = {});
    std::int64_t heads;
    Linear to_q{nullptr}, to_k{nullptr}, to_v{nullptr}, to_out0{nullptr};
    torch::nn::ModuleList to_out{nullptr};
};
TORCH_MODULE(Attention);

// proj -> (value, gate) halves -> value · GELU(gate) (exact GELU).
struct GegluImpl : torch::nn::Module {
    GegluImpl(std::int64_t in, std::int64_t out);
    torch::Tensor forward(const torch::Tensor& x);
    Linear proj{nullptr};
};
TORCH_MODULE(Geglu);

struct FeedForwardImpl : torch::nn::Module {
    FeedForwardImpl(std::int64_t dim, std::int64_t mult = 4);
    torch::Tensor forward(const torch::Tensor& x);
    Geglu geglu{nullptr};
    Linear out{nullptr};
    torch::nn::ModuleList net{nullptr};
};
TORCH_MODULE(FeedForward);

struct BasicTransformerBlockImpl : torch::nn::Module {
    BasicTransformerBlockImpl(std::int64_t dim, std::int64_t heads, std::int64_t head_dim,
                              std::int64_t context_dim);
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& context);
    LayerNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};
    Attention attn1{nullptr}, attn2{nullptr};
    FeedForward ff{nullptr};
};
TORCH_MODULE(BasicTransformerBlock);

// GroupNorm (eps 1e-6) - proj_in - transformer blocks - proj_out + input. The projections are
// 1x1 convolutions on the feature map (SD 1.x) or, with `linear_projection` (SDXL's
// use_linear_projection), Linear layers on the pixel tokens; both are registered as proj_in /
// proj_out.
struct Transformer2DImpl : torch::nn::Module {
    Transformer2DImpl(std::int64_t channels, std::int64_t heads, std::int64_t context_dim,
                      std::int64_t groups, std::int64_t layers = 1, bool linear_projection = false);
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& context);
    GroupNorm norm{nullptr};
    Conv2d proj_in_conv{nullptr}, proj_out_conv{nullptr};
    Linear proj_in_linear{nullptr}, proj_out_linear{nullptr};
    torch::nn::ModuleList transformer_blocks{nullptr};
};
TORCH_MODULE(Transformer2D);

// The VAE mid-block attention: one head over all pixels, GroupNorm first, residual added.
struct SpatialSelfAttentionImpl : torch::nn::Module {
    SpatialSelfAttentionImpl(std::int64_t channels, std::int64_t groups, double eps);
    torch::Tensor forward(const torch::Tensor& x);
    GroupNorm group_norm{nullptr};
    Linear to_q{nullptr}, to_k{nullptr}, to_v{nullptr}, to_out0{nullptr};
    torch::nn::ModuleList to_out{nullptr};
};
TORCH_MODULE(SpatialSelfAttention);

// Stride-2 3x3 conv named `conv`; padding 1 (UNet) or 0 with a (0,1,0,1) zero pad (VAE encoder).
struct DownsampleImpl : torch::nn::Module {
    DownsampleImpl(std::int64_t channels, std::int64_t padding);
    torch::Tensor forward(const torch::Tensor& x);
    std::int64_t padding;
    Conv2d conv{nullptr};
};
TORCH_MODULE(Downsample);

// Nearest 2x (or to `size`) then a 3x3 conv named `conv`.
struct UpsampleImpl : torch::nn::Module {
    explicit UpsampleImpl(std::int64_t channels);
    torch::Tensor forward(const torch::Tensor& x,
                          std::optional<std::vector<std::int64_t>> size = {});
    Conv2d conv{nullptr};
};
TORCH_MODULE(Upsample);

}  // namespace crucible::sd
