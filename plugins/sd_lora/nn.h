#pragma once
// Small layer primitives for the Stable Diffusion models. They own their parameters directly
// (not torch::nn::Linear & co.) for two reasons: a whole full-size model can be laid out on the
// meta device (names and shapes, no memory) to check it against the reference layout, and a
// Linear or 1x1 Conv2d can run a LoRA adapter (SPECS.md "LoRA") that it points to without
// owning it: the adapters live in a separate network module (lora.h), so the base model's
// parameter names stay exactly the diffusers ones and its state dict never holds adapters.
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/lora.h"

namespace crucible::sd {

// How new parameters are made: random with PyTorch's default init (Kaiming-uniform a = sqrt(5),
// bias uniform +-1/sqrt(fan_in); norms 1 / 0), as empty meta tensors (layout only), or allocated
// and left unfilled (Empty: every weight is read from a checkpoint next, which checks that each
// one is there; drawing 2.6 billion random numbers for SDXL's UNet first took tens of seconds).
enum class ParamInit { Random, Meta, Empty };

// Sets the mode for parameters created by this thread while the guard lives.
class ParamInitGuard {
  public:
    explicit ParamInitGuard(ParamInit mode);
    ~ParamInitGuard();
    ParamInitGuard(const ParamInitGuard&) = delete;
    ParamInitGuard& operator=(const ParamInitGuard&) = delete;

  private:
    ParamInit previous_;
};
ParamInit current_param_init();

// The LoRA adapter of one layer as SD's network holds it: the shared adapter (core/engine/lora.h)
// in the network layout, parameters "down" and "up", drawn on the meta device under
// ParamInit::Meta.
struct LoraAdapterImpl : torch::nn::Module {
    LoraAdapterImpl(std::int64_t in, std::int64_t out, const engine::LoraOptions& options,
                    bool conv1x1);
    engine::LoraWeights weights;
};
TORCH_MODULE(LoraAdapter);

// y = x W^T + b (+ LoRA).
struct LinearImpl : torch::nn::Module {
    LinearImpl(std::int64_t in, std::int64_t out, bool bias = true);
    torch::Tensor forward(const torch::Tensor& x);
    std::int64_t in_features, out_features;
    torch::Tensor weight, bias;
    LoraAdapter lora{nullptr};  // not a child module: set by LoraNetwork::install()
};
TORCH_MODULE(Linear);

struct Conv2dImpl : torch::nn::Module {
    Conv2dImpl(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride = 1,
               std::int64_t padding = 0, bool bias = true);
    torch::Tensor forward(const torch::Tensor& x);
    std::int64_t in_channels, out_channels, kernel, stride, padding;
    torch::Tensor weight, bias;
    LoraAdapter lora{nullptr};  // only on 1x1 convolutions; not a child module
};
TORCH_MODULE(Conv2d);

struct GroupNormImpl : torch::nn::Module {
    GroupNormImpl(std::int64_t groups, std::int64_t channels, double eps);
    torch::Tensor forward(const torch::Tensor& x);
    std::int64_t groups;
    double eps;
    torch::Tensor weight, bias;
};
TORCH_MODULE(GroupNorm);

struct LayerNormImpl : torch::nn::Module {
    LayerNormImpl(std::int64_t dim, double eps);
    torch::Tensor forward(const torch::Tensor& x);
    std::int64_t dim;
    double eps;
    torch::Tensor weight, bias;
};
TORCH_MODULE(LayerNorm);

struct EmbeddingImpl : torch::nn::Module {
    EmbeddingImpl(std::int64_t count, std::int64_t dim);
    torch::Tensor forward(const torch::Tensor& ids);
    torch::Tensor weight;
};
TORCH_MODULE(Embedding);

// softmax(q k^T / sqrt(d)) v for [B, heads, N, d] tensors in one fused kernel (it accumulates in
// fp32 for half inputs); `mask` (additive, broadcastable to [B, heads, Nq, Nk], any float dtype)
// may be undefined.
torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& mask = {});

// [B, N, heads·d] <-> [B, heads, N, d]
torch::Tensor split_heads(const torch::Tensor& x, std::int64_t heads);
torch::Tensor merge_heads(const torch::Tensor& x);

// Every parameter name and shape of a module (recursive), in registration order.
std::vector<std::pair<std::string, std::vector<std::int64_t>>> parameter_layout(
    const torch::nn::Module& module);

}  // namespace crucible::sd
