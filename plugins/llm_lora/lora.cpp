#include "plugins/llm_lora/lora.h"

#include <algorithm>
#include <cmath>

#include "core/base/error.h"

namespace crucible::llm {

const std::vector<std::string>& lora_target_names() {
    static const std::vector<std::string> names{"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                                "gate_proj", "up_proj", "down_proj"};
    return names;
}

void LoraSpec::validate() {
    if (rank < 1) throw InputError("lora_r", "must be at least 1, got " + std::to_string(rank));
    if (!(alpha > 0)) throw InputError("lora_alpha", "must be positive");
    if (!(dropout >= 0 && dropout < 1)) throw InputError("lora_dropout", "must be in [0, 1)");
    if (targets.empty()) throw InputError("lora_targets", "names no module");
    std::vector<std::string> normalized;
    for (std::string t : targets) {
        if (t.find("_proj") == std::string::npos) t += "_proj";
        const auto& known = lora_target_names();
        if (std::find(known.begin(), known.end(), t) == known.end())
            throw InputError("lora_targets", "unknown module '" + t +
                                                 "' (known: q k v o gate up down, with or "
                                                 "without _proj)");
        if (std::find(normalized.begin(), normalized.end(), t) == normalized.end())
            normalized.push_back(t);
    }
    // Model order, so adapter files and configs list targets the same way every time.
    std::vector<std::string> ordered;
    for (const auto& n : lora_target_names())
        if (std::find(normalized.begin(), normalized.end(), n) != normalized.end())
            ordered.push_back(n);
    targets = ordered;
}

LoraLinearImpl::LoraLinearImpl(std::int64_t in, std::int64_t out, bool with_bias, WeightInit init)
    : in_features(in), out_features(out) {
    if (init == WeightInit::Empty) {
        weight = register_parameter("weight", torch::empty({out, in}));
        if (with_bias) bias = register_parameter("bias", torch::empty({out}));
        return;
    }
    // A Linear's default keeps randomly initialized test models well conditioned.
    torch::nn::Linear linear(torch::nn::LinearOptions(in, out).bias(with_bias));
    weight = register_parameter("weight", linear->weight.detach().clone());
    if (with_bias) bias = register_parameter("bias", linear->bias.detach().clone());
}

torch::Tensor LoraLinearImpl::forward(const torch::Tensor& x) {
    const torch::Tensor y = is_quantized() ? engine::nf4_linear(x, nf4, bias)
                                           : torch::nn::functional::linear(x, weight, bias);
    return has_adapter() ? lora.add_to_linear(y, x, is_training()) : y;
}

void LoraLinearImpl::add_adapter(const engine::LoraOptions& options) {
    if (has_adapter()) engine::unregister_lora(*this);
    lora = engine::LoraWeights::create(in_features, out_features, options, /*conv1x1=*/false,
                                       weight.device());
    engine::register_lora(*this, lora, engine::LoraLayout::Peft);
    weight.set_requires_grad(false);
    if (bias.defined()) bias.set_requires_grad(false);
}

torch::Tensor LoraLinearImpl::base_weight() const {
    return is_quantized() ? nf4.dequantize() : weight.detach();
}

torch::Tensor LoraLinearImpl::merged_weight() const {
    if (!has_adapter()) return base_weight().clone();
    return lora.merged(base_weight());
}

void LoraLinearImpl::merge() {
    if (!has_adapter() && !is_quantized()) return;
    const torch::Tensor merged = merged_weight();
    {
        torch::NoGradGuard no_grad;
        weight.set_data(merged);
    }
    nf4 = {};
    if (has_adapter()) engine::unregister_lora(*this);
    lora = {};
}

void LoraLinearImpl::reserve_nf4(torch::Device device) {
    if (!is_quantized())
        reserved_nf4_ =
            engine::Nf4Tensor::allocate({out_features, in_features}, weight.scalar_type(), device);
}

void LoraLinearImpl::quantize_nf4() {
    if (!is_quantized()) quantize_nf4_from(weight.detach(), weight.scalar_type());
}

void LoraLinearImpl::quantize_nf4_from(const torch::Tensor& dense, torch::ScalarType dtype) {
    if (dense.sizes() != torch::IntArrayRef({out_features, in_features}))
        throw Error("nf4: the weight's shape differs from the layer's");
    if (reserved_nf4_.defined() && reserved_nf4_.packed.device() == dense.device()) {
        nf4 = std::move(reserved_nf4_);
        nf4.assign(dense);
    } else {
        nf4 = engine::Nf4Tensor::quantize(dense);
    }
    nf4.dtype = dtype;
    reserved_nf4_ = {};
    torch::NoGradGuard no_grad;
    weight.set_requires_grad(false);
    weight.set_data(torch::empty({0}, weight.options().device(dense.device()).dtype(dtype)));
}

}  // namespace crucible::llm
