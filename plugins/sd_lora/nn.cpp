#include "plugins/sd_lora/nn.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/base/error.h"

namespace crucible::sd {
namespace {

thread_local ParamInit g_init = ParamInit::Random;

torch::Tensor make_empty(const std::vector<std::int64_t>& shape) {
    if (g_init == ParamInit::Meta)
        return torch::empty(shape,
                            torch::TensorOptions().dtype(torch::kFloat32).device(torch::kMeta));
    return torch::empty(shape, torch::kFloat32);
}

// PyTorch's default for Linear/Conv weights: kaiming_uniform(a = sqrt(5)) = U(+-1/sqrt(fan_in)).
torch::Tensor uniform_param(const std::vector<std::int64_t>& shape, std::int64_t fan_in) {
    torch::Tensor t = make_empty(shape);
    if (g_init == ParamInit::Random) {
        torch::NoGradGuard no_grad;
        const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
        t.uniform_(-bound, bound);
    }
    return t;
}

torch::Tensor filled_param(const std::vector<std::int64_t>& shape, double value) {
    torch::Tensor t = make_empty(shape);
    if (g_init == ParamInit::Random) {
        torch::NoGradGuard no_grad;
        t.fill_(value);
    }
    return t;
}

}  // namespace

ParamInitGuard::ParamInitGuard(ParamInit mode) : previous_(g_init) {
    g_init = mode;
}
ParamInitGuard::~ParamInitGuard() {
    g_init = previous_;
}
ParamInit current_param_init() {
    return g_init;
}

LoraAdapterImpl::LoraAdapterImpl(std::int64_t in, std::int64_t out,
                                 const engine::LoraOptions& options, bool conv1x1)
    : weights(engine::LoraWeights::create(
          in, out, options, conv1x1,
          g_init == ParamInit::Meta ? torch::Device(torch::kMeta) : torch::Device(torch::kCPU))) {
    engine::register_lora(*this, weights, engine::LoraLayout::Network);
}

LinearImpl::LinearImpl(std::int64_t in, std::int64_t out, bool with_bias)
    : in_features(in), out_features(out) {
    weight = register_parameter("weight", uniform_param({out, in}, in));
    if (with_bias) bias = register_parameter("bias", uniform_param({out}, in));
}

torch::Tensor LinearImpl::forward(const torch::Tensor& x) {
    const torch::Tensor y = torch::linear(x, weight, bias);
    return lora ? lora->weights.add_to_linear(y, x, lora->is_training()) : y;
}

Conv2dImpl::Conv2dImpl(std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t s,
                       std::int64_t p, bool with_bias)
    : in_channels(in), out_channels(out), kernel(k), stride(s), padding(p) {
    weight = register_parameter("weight", uniform_param({out, in, k, k}, in * k * k));
    if (with_bias) bias = register_parameter("bias", uniform_param({out}, in * k * k));
}

torch::Tensor Conv2dImpl::forward(const torch::Tensor& x) {
    const torch::Tensor y = torch::conv2d(x, weight, bias, {stride, stride}, {padding, padding});
    return lora ? lora->weights.add_to_conv1x1(y, x, lora->is_training()) : y;
}

GroupNormImpl::GroupNormImpl(std::int64_t g, std::int64_t channels, double e) : groups(g), eps(e) {
    if (g <= 0 || channels % g != 0)
        throw InputError("norm_num_groups", std::to_string(channels) +
                                                " channels cannot be split into " +
                                                std::to_string(g) + " groups");
    weight = register_parameter("weight", filled_param({channels}, 1.0));
    bias = register_parameter("bias", filled_param({channels}, 0.0));
}

torch::Tensor GroupNormImpl::forward(const torch::Tensor& x) {
    return torch::group_norm(x, groups, weight, bias, eps);
}

LayerNormImpl::LayerNormImpl(std::int64_t d, double e) : dim(d), eps(e) {
    weight = register_parameter("weight", filled_param({d}, 1.0));
    bias = register_parameter("bias", filled_param({d}, 0.0));
}

torch::Tensor LayerNormImpl::forward(const torch::Tensor& x) {
    return torch::layer_norm(x, {dim}, weight, bias, eps);
}

EmbeddingImpl::EmbeddingImpl(std::int64_t count, std::int64_t dim) {
    torch::Tensor w = make_empty({count, dim});
    if (g_init == ParamInit::Random) {
        torch::NoGradGuard no_grad;
        w.normal_(0.0, 1.0);
    }
    weight = register_parameter("weight", w);
}

torch::Tensor EmbeddingImpl::forward(const torch::Tensor& ids) {
    return torch::embedding(weight, ids);
}

torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& mask) {
    // One fused kernel for every precision (flash or memory-efficient attention on CUDA, a
    // blocked kernel on the CPU: the 4096² scores of SD at 512 px never exist at once). An
    // additive mask takes the queries' dtype, so a fp32 mask beside half queries (autocast, or
    // fp16 weights) is used as it is instead of sending the call down another path.
    if (!mask.defined()) return at::scaled_dot_product_attention(q, k, v);
    return at::scaled_dot_product_attention(q, k, v, mask.to(q.scalar_type()));
}

torch::Tensor split_heads(const torch::Tensor& x, std::int64_t heads) {
    const auto b = x.size(0), n = x.size(1), c = x.size(2);
    return x.reshape({b, n, heads, c / heads}).permute({0, 2, 1, 3});
}

torch::Tensor merge_heads(const torch::Tensor& x) {
    const auto b = x.size(0), h = x.size(1), n = x.size(2), d = x.size(3);
    return x.permute({0, 2, 1, 3}).reshape({b, n, h * d});
}

std::vector<std::pair<std::string, std::vector<std::int64_t>>> parameter_layout(
    const torch::nn::Module& module) {
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> out;
    for (const auto& item : module.named_parameters(true))
        out.emplace_back(item.key(), item.value().sizes().vec());
    return out;
}

}  // namespace crucible::sd
