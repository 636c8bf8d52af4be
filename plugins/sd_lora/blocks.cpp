#include "plugins/sd_lora/blocks.h"

#include <torch/torch.h>

#include <cmath>

#include "core/base/error.h"

namespace crucible::sd {

torch::Tensor timestep_embedding(const torch::Tensor& timesteps, std::int64_t dim,
                                 bool flip_sin_to_cos, double shift) {
    const std::int64_t half = dim / 2;
    const auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(timesteps.device());
    const torch::Tensor exponent =
        torch::arange(0, half, opts) * (-std::log(10000.0)) / (static_cast<double>(half) - shift);
    const torch::Tensor args =
        timesteps.to(torch::kFloat32).reshape({-1, 1}) * torch::exp(exponent).reshape({1, -1});
    torch::Tensor emb = flip_sin_to_cos ? torch::cat({torch::cos(args), torch::sin(args)}, -1)
                                        : torch::cat({torch::sin(args), torch::cos(args)}, -1);
    if (dim % 2 == 1) emb = torch::constant_pad_nd(emb, {0, 1});
    return emb;
}

ResnetBlockImpl::ResnetBlockImpl(std::int64_t in, std::int64_t out, std::int64_t temb_channels,
                                 std::int64_t groups, double eps) {
    norm1 = register_module("norm1", GroupNorm(groups, in, eps));
    conv1 = register_module("conv1", Conv2d(in, out, 3, 1, 1));
    if (temb_channels > 0)
        time_emb_proj = register_module("time_emb_proj", Linear(temb_channels, out));
    norm2 = register_module("norm2", GroupNorm(groups, out, eps));
    conv2 = register_module("conv2", Conv2d(out, out, 3, 1, 1));
    if (in != out) conv_shortcut = register_module("conv_shortcut", Conv2d(in, out, 1));
}

torch::Tensor ResnetBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& temb) {
    torch::Tensor h = conv1(torch::silu(norm1(x)));
    if (time_emb_proj && temb.defined()) {
        const torch::Tensor t = time_emb_proj(torch::silu(temb));
        h = h + t.unsqueeze(-1).unsqueeze(-1);
    }
    h = conv2(torch::silu(norm2(h)));
    const torch::Tensor shortcut = conv_shortcut ? conv_shortcut(x) : x;
    return shortcut + h;
}

AttentionImpl::AttentionImpl(std::int64_t query_dim, std::int64_t context_dim, std::int64_t h,
                             std::int64_t head_dim, bool qkv_bias)
    : heads(h) {
    const std::int64_t inner = h * head_dim;
    const std::int64_t kv_dim = context_dim > 0 ? context_dim : query_dim;
    to_q = register_module("to_q", Linear(query_dim, inner, qkv_bias));
    to_k = register_module("to_k", Linear(kv_dim, inner, qkv_bias));
    to_v = register_module("to_v", Linear(kv_dim, inner, qkv_bias));
    to_out0 = Linear(inner, query_dim, true);
    to_out = register_module("to_out", torch::nn::ModuleList(to_out0, torch::nn::Dropout(0.0)));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& context) {
    const torch::Tensor& kv = context.defined() ? context : x;
    const torch::Tensor q = split_heads(to_q(x), heads);
    const torch::Tensor k = split_heads(to_k(kv), heads);
    const torch::Tensor v = split_heads(to_v(kv), heads);
    return to_out0(merge_heads(attention(q, k, v)));
}

GegluImpl::GegluImpl(std::int64_t in, std::int64_t out) {
    proj = register_module("proj", Linear(in, out * 2));
}

torch::Tensor GegluImpl::forward(const torch::Tensor& x) {
    const auto parts = proj(x).chunk(2, -1);
    return parts[0] * torch::gelu(parts[1]);
}

FeedForwardImpl::FeedForwardImpl(std::int64_t dim, std::int64_t mult) {
    geglu = Geglu(dim, dim * mult);
    out = Linear(dim * mult, dim);
    net = register_module("net", torch::nn::ModuleList(geglu, torch::nn::Dropout(0.0), out));
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
    return out(geglu(x));
}

BasicTransformerBlockImpl::BasicTransformerBlockImpl(std::int64_t dim, std::int64_t heads,
                                                     std::int64_t head_dim,
                                                     std::int64_t context_dim) {
    norm1 = register_module("norm1", LayerNorm(dim, 1e-5));
    attn1 = register_module("attn1", Attention(dim, 0, heads, head_dim, false));
    norm2 = register_module("norm2", LayerNorm(dim, 1e-5));
    attn2 = register_module("attn2", Attention(dim, context_dim, heads, head_dim, false));
    norm3 = register_module("norm3", LayerNorm(dim, 1e-5));
    ff = register_module("ff", FeedForward(dim));
}

torch::Tensor BasicTransformerBlockImpl::forward(const torch::Tensor& x,
                                                 const torch::Tensor& context) {
    torch::Tensor h = attn1(norm1(x)) + x;
    h = attn2(norm2(h), context) + h;
    return ff(norm3(h)) + h;
}

Transformer2DImpl::Transformer2DImpl(std::int64_t channels, std::int64_t heads,
                                     std::int64_t context_dim, std::int64_t groups,
                                     std::int64_t layers, bool linear_projection) {
    if (heads <= 0 || channels % heads != 0)
        throw InputError("attention_head_dim", std::to_string(channels) +
                                                   " channels cannot be split into " +
                                                   std::to_string(heads) + " heads");
    norm = register_module("norm", GroupNorm(groups, channels, 1e-6));
    if (linear_projection)
        proj_in_linear = register_module("proj_in", Linear(channels, channels));
    else
        proj_in_conv = register_module("proj_in", Conv2d(channels, channels, 1));
    transformer_blocks = register_module("transformer_blocks", torch::nn::ModuleList());
    for (std::int64_t i = 0; i < layers; ++i)
        transformer_blocks->push_back(
            BasicTransformerBlock(channels, heads, channels / heads, context_dim));
    if (linear_projection)
        proj_out_linear = register_module("proj_out", Linear(channels, channels));
    else
        proj_out_conv = register_module("proj_out", Conv2d(channels, channels, 1));
}

torch::Tensor Transformer2DImpl::forward(const torch::Tensor& x, const torch::Tensor& context) {
    const auto b = x.size(0), c = x.size(1), hh = x.size(2), ww = x.size(3);
    torch::Tensor h = norm(x);
    if (proj_in_conv) h = proj_in_conv(h);
    h = h.permute({0, 2, 3, 1}).reshape({b, hh * ww, c});
    if (proj_in_linear) h = proj_in_linear(h);
    for (const auto& block : *transformer_blocks)
        h = block->as<BasicTransformerBlockImpl>()->forward(h, context);
    if (proj_out_linear) h = proj_out_linear(h);
    h = h.reshape({b, hh, ww, c}).permute({0, 3, 1, 2}).contiguous();
    if (proj_out_conv) h = proj_out_conv(h);
    return h + x;
}

SpatialSelfAttentionImpl::SpatialSelfAttentionImpl(std::int64_t channels, std::int64_t groups,
                                                   double eps) {
    group_norm = register_module("group_norm", GroupNorm(groups, channels, eps));
    to_q = register_module("to_q", Linear(channels, channels));
    to_k = register_module("to_k", Linear(channels, channels));
    to_v = register_module("to_v", Linear(channels, channels));
    to_out0 = Linear(channels, channels);
    to_out = register_module("to_out", torch::nn::ModuleList(to_out0, torch::nn::Dropout(0.0)));
}

torch::Tensor SpatialSelfAttentionImpl::forward(const torch::Tensor& x) {
    const auto b = x.size(0), c = x.size(1), hh = x.size(2), ww = x.size(3);
    torch::Tensor h = group_norm(x).reshape({b, c, hh * ww}).transpose(1, 2);
    const torch::Tensor q = to_q(h).unsqueeze(1);
    const torch::Tensor k = to_k(h).unsqueeze(1);
    const torch::Tensor v = to_v(h).unsqueeze(1);
    h = to_out0(attention(q, k, v).squeeze(1));
    return h.transpose(1, 2).reshape({b, c, hh, ww}) + x;
}

DownsampleImpl::DownsampleImpl(std::int64_t channels, std::int64_t p) : padding(p) {
    conv = register_module("conv", Conv2d(channels, channels, 3, 2, p));
}

torch::Tensor DownsampleImpl::forward(const torch::Tensor& x) {
    if (padding == 0) return conv(torch::constant_pad_nd(x, {0, 1, 0, 1}));
    return conv(x);
}

UpsampleImpl::UpsampleImpl(std::int64_t channels) {
    conv = register_module("conv", Conv2d(channels, channels, 3, 1, 1));
}

torch::Tensor UpsampleImpl::forward(const torch::Tensor& x,
                                    std::optional<std::vector<std::int64_t>> size) {
    namespace F = torch::nn::functional;
    auto opts = F::InterpolateFuncOptions().mode(torch::kNearest);
    if (size)
        opts.size(*size);
    else
        opts.scale_factor(std::vector<double>{2.0, 2.0});
    return conv(F::interpolate(x, opts));
}

}  // namespace crucible::sd
