#include "plugins/llm_lora/llama_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/base/error.h"
#include "core/engine/activation_checkpoint.h"
#include "plugins/llm_lora/linear_cross_entropy.h"
#include "plugins/llm_lora/rotary.h"

namespace crucible::llm {
namespace {

std::int64_t int_field(const Json& json, const char* name, std::int64_t fallback,
                       const std::string& where) {
    if (!json.contains(name) || json[name].is_null()) return fallback;
    if (!json[name].is_number_integer())
        throw InputError(where, std::string("field '") + name + "': expected an integer, got " +
                                    json_type_name(json[name]));
    return json[name].get<std::int64_t>();
}

double number_field(const Json& json, const char* name, double fallback, const std::string& where) {
    if (!json.contains(name) || json[name].is_null()) return fallback;
    if (!json[name].is_number())
        throw InputError(where, std::string("field '") + name + "': expected a number, got " +
                                    json_type_name(json[name]));
    return json[name].get<double>();
}

bool bool_field(const Json& json, const char* name, bool fallback, const std::string& where) {
    if (!json.contains(name) || json[name].is_null()) return fallback;
    if (!json[name].is_boolean())
        throw InputError(where, std::string("field '") + name + "': expected true or false, got " +
                                    json_type_name(json[name]));
    return json[name].get<bool>();
}

// [B, kv, T, D] -> [B, kv*rep, T, D], each KV head repeated `rep` times in a row.
torch::Tensor repeat_kv(const torch::Tensor& x, std::int64_t rep) {
    if (rep == 1) return x;
    const auto b = x.size(0), h = x.size(1), t = x.size(2), d = x.size(3);
    return x.unsqueeze(2).expand({b, h, rep, t, d}).reshape({b, h * rep, t, d});
}

}  // namespace

void LlamaConfig::validate(const std::string& where) const {
    auto positive = [&](std::int64_t v, const char* name) {
        if (v < 1)
            throw InputError(where, std::string("field '") + name + "' must be positive, got " +
                                        std::to_string(v));
    };
    positive(vocab_size, "vocab_size");
    positive(hidden_size, "hidden_size");
    positive(intermediate_size, "intermediate_size");
    positive(num_hidden_layers, "num_hidden_layers");
    positive(num_attention_heads, "num_attention_heads");
    positive(num_key_value_heads, "num_key_value_heads");
    positive(max_position_embeddings, "max_position_embeddings");
    if (head_dim == 0 && hidden_size % num_attention_heads != 0)
        throw InputError(where, "hidden_size " + std::to_string(hidden_size) +
                                    " is not a multiple of num_attention_heads " +
                                    std::to_string(num_attention_heads));
    if (head_size() % 2 != 0)
        throw InputError(where, "head size " + std::to_string(head_size()) +
                                    " is odd; rotary embeddings need an even one");
    if (num_attention_heads % num_key_value_heads != 0)
        throw InputError(where, "num_attention_heads " + std::to_string(num_attention_heads) +
                                    " is not a multiple of num_key_value_heads " +
                                    std::to_string(num_key_value_heads));
    if (!(rms_norm_eps > 0)) throw InputError(where, "field 'rms_norm_eps' must be positive");
    if (!(rope_theta > 0)) throw InputError(where, "field 'rope_theta' must be positive");
    if (vocab_size > (1 << 24) || hidden_size > (1 << 16) || intermediate_size > (1 << 18) ||
        num_hidden_layers > 1024 || num_attention_heads > 1024)
        throw InputError(where, "model sizes are implausibly large");
}

LlamaConfig LlamaConfig::from_hf_json(const Json& json, const std::string& where) {
    if (!json.is_object()) throw InputError(where, "expected a JSON object");
    LlamaConfig c;
    if (json.contains("model_type") && !json["model_type"].is_string())
        throw InputError(where, "field 'model_type': expected a string");
    c.model_type = json.value("model_type", std::string());
    if (c.model_type != "llama" && c.model_type != "mistral" && c.model_type != "qwen2" &&
        c.model_type != "qwen3")
        throw InputError(where, "unsupported architecture: model_type '" + c.model_type +
                                    "' (supported: llama, mistral, qwen2, qwen3)");
    c.qk_norm = c.model_type == "qwen3";
    c.vocab_size = int_field(json, "vocab_size", 0, where);
    c.hidden_size = int_field(json, "hidden_size", 0, where);
    c.intermediate_size = int_field(json, "intermediate_size", 0, where);
    c.num_hidden_layers = int_field(json, "num_hidden_layers", 0, where);
    c.num_attention_heads = int_field(json, "num_attention_heads", 0, where);
    c.num_key_value_heads = int_field(json, "num_key_value_heads", c.num_attention_heads, where);
    c.head_dim = int_field(json, "head_dim", 0, where);
    if (c.num_attention_heads > 0 && c.head_dim * c.num_attention_heads == c.hidden_size)
        c.head_dim = 0;
    c.max_position_embeddings = int_field(json, "max_position_embeddings", 2048, where);
    c.rms_norm_eps = number_field(json, "rms_norm_eps", 1e-6, where);
    c.rope_theta = number_field(json, "rope_theta", 10000.0, where);
    c.tie_word_embeddings = bool_field(json, "tie_word_embeddings", false, where);
    c.attention_bias = bool_field(json, "attention_bias", c.model_type == "qwen2", where);
    if (bool_field(json, "mlp_bias", false, where))
        throw InputError(where, "mlp_bias true is not supported");
    if (c.model_type == "mistral" && json.contains("sliding_window") &&
        !json["sliding_window"].is_null() &&
        int_field(json, "sliding_window", 0, where) < c.max_position_embeddings)
        throw InputError(where, "sliding-window attention is not supported");
    // Qwen2/3 configs carry a sliding window that only applies when use_sliding_window is set.
    if (bool_field(json, "use_sliding_window", false, where))
        throw InputError(where, "use_sliding_window true is not supported");
    // transformers 5 writes the rotary settings as one object, "rope_parameters" (rope_type,
    // rope_theta and the scaling fields); 4.x wrote "rope_theta" and "rope_scaling".
    const char* rope_field = nullptr;
    for (const char* name : {"rope_parameters", "rope_scaling"})
        if (rope_field == nullptr && json.contains(name) && !json[name].is_null())
            rope_field = name;
    if (rope_field != nullptr) {
        const Json& rs = json[rope_field];
        if (!rs.is_object())
            throw InputError(where, std::string("field '") + rope_field + "': expected an object");
        c.rope_theta = number_field(rs, "rope_theta", c.rope_theta, where);
        if (number_field(rs, "partial_rotary_factor", 1.0, where) != 1.0)
            throw InputError(where, std::string(rope_field) +
                                        ": partial_rotary_factor other than 1 is not supported");
        std::string type = rs.value("rope_type", rs.value("type", std::string()));
        if (type != "llama3" && type != "default")
            throw InputError(where, std::string(rope_field) + " type '" + type +
                                        "' is not supported (supported: llama3)");
        if (type == "llama3") {
            c.rope_scaling.type = type;
            c.rope_scaling.factor = number_field(rs, "factor", 8.0, where);
            c.rope_scaling.low_freq_factor = number_field(rs, "low_freq_factor", 1.0, where);
            c.rope_scaling.high_freq_factor = number_field(rs, "high_freq_factor", 4.0, where);
            c.rope_scaling.original_max_position_embeddings =
                int_field(rs, "original_max_position_embeddings", 8192, where);
            if (!(c.rope_scaling.factor > 0) ||
                !(c.rope_scaling.high_freq_factor > c.rope_scaling.low_freq_factor) ||
                c.rope_scaling.original_max_position_embeddings < 1)
                throw InputError(where, "rope_scaling: bad llama3 parameters");
        }
    }
    c.validate(where);
    return c;
}

Json LlamaConfig::to_hf_json() const {
    Json j;
    j["architectures"] = Json::array({model_type == "qwen2"     ? "Qwen2ForCausalLM"
                                      : model_type == "qwen3"   ? "Qwen3ForCausalLM"
                                      : model_type == "mistral" ? "MistralForCausalLM"
                                                                : "LlamaForCausalLM"});
    j["model_type"] = model_type;
    j["vocab_size"] = vocab_size;
    j["hidden_size"] = hidden_size;
    j["intermediate_size"] = intermediate_size;
    j["num_hidden_layers"] = num_hidden_layers;
    j["num_attention_heads"] = num_attention_heads;
    j["num_key_value_heads"] = num_key_value_heads;
    j["head_dim"] = head_size();
    j["max_position_embeddings"] = max_position_embeddings;
    j["rms_norm_eps"] = rms_norm_eps;
    j["rope_theta"] = rope_theta;
    j["tie_word_embeddings"] = tie_word_embeddings;
    j["attention_bias"] = attention_bias;
    j["hidden_act"] = "silu";
    j["torch_dtype"] = "float32";
    if (rope_scaling.type == "llama3")
        j["rope_scaling"] = {
            {"rope_type", "llama3"},
            {"factor", rope_scaling.factor},
            {"low_freq_factor", rope_scaling.low_freq_factor},
            {"high_freq_factor", rope_scaling.high_freq_factor},
            {"original_max_position_embeddings", rope_scaling.original_max_position_embeddings}};
    else
        j["rope_scaling"] = nullptr;
    return j;
}

torch::Tensor rope_inv_freq(const LlamaConfig& config) {
    const std::int64_t d = config.head_size();
    auto inv = 1.0 / torch::pow(config.rope_theta,
                                torch::arange(0, d, 2, torch::kFloat64) / static_cast<double>(d));
    if (config.rope_scaling.type == "llama3") {
        const auto& s = config.rope_scaling;
        const double old_len = static_cast<double>(s.original_max_position_embeddings);
        const double low_wavelen = old_len / s.low_freq_factor;
        const double high_wavelen = old_len / s.high_freq_factor;
        auto acc = inv.accessor<double, 1>();
        for (std::int64_t i = 0; i < inv.size(0); ++i) {
            const double f = acc[i];
            const double wavelen = 6.283185307179586 / f;
            if (wavelen < high_wavelen) continue;
            if (wavelen > low_wavelen) {
                acc[i] = f / s.factor;
            } else {
                const double smooth = (old_len / wavelen - s.low_freq_factor) /
                                      (s.high_freq_factor - s.low_freq_factor);
                acc[i] = (1 - smooth) * f / s.factor + smooth * f;
            }
        }
    }
    return inv.to(torch::kFloat32);
}

RmsNormImpl::RmsNormImpl(std::int64_t dim, double e) : eps(e) {
    weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) {
    const torch::Tensor xf = x.to(torch::kFloat32);
    const torch::Tensor normed = xf * torch::rsqrt(xf.pow(2).mean(-1, true) + eps);
    return weight * normed.to(x.scalar_type());
}

LlamaAttentionImpl::LlamaAttentionImpl(const LlamaConfig& c, WeightInit init) : config(c) {
    const auto d = c.head_size();
    const bool b = c.attention_bias;
    q_proj =
        register_module("q_proj", LoraLinear(c.hidden_size, c.num_attention_heads * d, b, init));
    k_proj =
        register_module("k_proj", LoraLinear(c.hidden_size, c.num_key_value_heads * d, b, init));
    v_proj =
        register_module("v_proj", LoraLinear(c.hidden_size, c.num_key_value_heads * d, b, init));
    o_proj = register_module("o_proj",
                             LoraLinear(c.num_attention_heads * d, c.hidden_size, false, init));
    if (c.qk_norm) {
        q_norm = register_module("q_norm", RmsNorm(d, c.rms_norm_eps));
        k_norm = register_module("k_norm", RmsNorm(d, c.rms_norm_eps));
    }
}

torch::Tensor LlamaAttentionImpl::forward(const torch::Tensor& x, const AttentionContext& ctx,
                                          torch::Tensor* cache_k, torch::Tensor* cache_v) {
    const auto batch = x.size(0), time = x.size(1);
    const auto heads = config.num_attention_heads, kv_heads = config.num_key_value_heads;
    const auto d = config.head_size();
    torch::Tensor q = q_proj(x).view({batch, time, heads, d});
    torch::Tensor k = k_proj(x).view({batch, time, kv_heads, d});
    if (config.qk_norm) {
        q = q_norm(q);
        k = k_norm(k);
    }
    q = apply_rotary(q, ctx.cos, ctx.sin).transpose(1, 2);
    k = apply_rotary(k, ctx.cos, ctx.sin).transpose(1, 2);
    torch::Tensor v = v_proj(x).view({batch, time, kv_heads, d}).transpose(1, 2);
    if (cache_k != nullptr) {
        if (cache_k->defined()) {
            k = torch::cat({*cache_k, k}, 2);
            v = torch::cat({*cache_v, v}, 2);
        }
        *cache_k = k.detach();
        *cache_v = v.detach();
    }
    const auto rep = heads / kv_heads;
    k = repeat_kv(k, rep);
    v = repeat_kv(v, rep);
    torch::Tensor out;
    if (ctx.fused) {
        // Without a cache the kernel's own causal flag is the mask.
        out = ctx.mask.defined()
                  ? at::scaled_dot_product_attention(q, k, v, ctx.mask.logical_not(), 0.0, false)
                  : at::scaled_dot_product_attention(q, k, v, {}, 0.0, ctx.past == 0 && time > 1);
    } else {
        torch::Tensor scores =
            torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(d));
        if (ctx.mask.defined())
            scores = scores.masked_fill(ctx.mask, -std::numeric_limits<float>::infinity());
        out = torch::matmul(torch::softmax(scores.to(torch::kFloat32), -1).to(q.scalar_type()), v);
    }
    return o_proj(out.transpose(1, 2).reshape({batch, time, heads * d}));
}

LlamaMlpImpl::LlamaMlpImpl(const LlamaConfig& c, WeightInit init) {
    gate_proj =
        register_module("gate_proj", LoraLinear(c.hidden_size, c.intermediate_size, false, init));
    up_proj =
        register_module("up_proj", LoraLinear(c.hidden_size, c.intermediate_size, false, init));
    down_proj =
        register_module("down_proj", LoraLinear(c.intermediate_size, c.hidden_size, false, init));
}

torch::Tensor LlamaMlpImpl::forward(const torch::Tensor& x) {
    return down_proj(torch::silu(gate_proj(x)) * up_proj(x));
}

LlamaDecoderLayerImpl::LlamaDecoderLayerImpl(const LlamaConfig& c, WeightInit init) {
    self_attn = register_module("self_attn", LlamaAttention(c, init));
    mlp = register_module("mlp", LlamaMlp(c, init));
    input_layernorm = register_module("input_layernorm", RmsNorm(c.hidden_size, c.rms_norm_eps));
    post_attention_layernorm =
        register_module("post_attention_layernorm", RmsNorm(c.hidden_size, c.rms_norm_eps));
}

torch::Tensor LlamaDecoderLayerImpl::forward(const torch::Tensor& x, const AttentionContext& ctx,
                                             torch::Tensor* cache_k, torch::Tensor* cache_v) {
    const torch::Tensor h = x + self_attn(input_layernorm(x), ctx, cache_k, cache_v);
    return h + mlp(post_attention_layernorm(h));
}

LlamaBackboneImpl::LlamaBackboneImpl(const LlamaConfig& c, WeightInit init) {
    torch::nn::EmbeddingOptions embedding(c.vocab_size, c.hidden_size);
    if (init == WeightInit::Empty) embedding._weight(torch::empty({c.vocab_size, c.hidden_size}));
    embed_tokens = register_module("embed_tokens", torch::nn::Embedding(embedding));
    layers = register_module("layers", torch::nn::ModuleList());
    for (std::int64_t i = 0; i < c.num_hidden_layers; ++i)
        layers->push_back(LlamaDecoderLayer(c, init));
    norm = register_module("norm", RmsNorm(c.hidden_size, c.rms_norm_eps));
}

LlamaForCausalLmImpl::LlamaForCausalLmImpl(const LlamaConfig& c, WeightInit init) : config(c) {
    c.validate("model config");
    model = register_module("model", LlamaBackbone(c, init));
    if (!c.tie_word_embeddings) {
        lm_head = register_module(
            "lm_head",
            torch::nn::Linear(torch::nn::LinearOptions(c.hidden_size, c.vocab_size).bias(false)));
        // Linear has no uninitialized form: its random weight is dropped at once, before
        // anything else is loaded.
        if (init == WeightInit::Empty)
            lm_head->weight.set_data(torch::empty({c.vocab_size, c.hidden_size}));
    }
    inv_freq_ = register_buffer("inv_freq", rope_inv_freq(c));
}

torch::Tensor LlamaForCausalLmImpl::forward(const torch::Tensor& tokens, KvCache* cache) {
    const torch::Tensor h = hidden_states(tokens, cache);
    return torch::nn::functional::linear(h, head_weight()).to(torch::kFloat32);
}

const torch::Tensor& LlamaForCausalLmImpl::head_weight() {
    return config.tie_word_embeddings ? model->embed_tokens->weight : lm_head->weight;
}

torch::Tensor LlamaForCausalLmImpl::hidden_states(const torch::Tensor& tokens, KvCache* cache) {
    if (tokens.dim() != 2) throw Error("tokens must be [batch, time]");
    const auto time = tokens.size(1);
    const std::int64_t past = cache != nullptr ? cache->length() : 0;
    if (cache != nullptr && cache->keys.empty()) {
        cache->keys.resize(static_cast<std::size_t>(config.num_hidden_layers));
        cache->values.resize(static_cast<std::size_t>(config.num_hidden_layers));
    }
    const auto positions = torch::arange(
        past, past + time, torch::TensorOptions().dtype(torch::kFloat32).device(tokens.device()));
    const torch::Tensor freqs = torch::outer(positions, inv_freq_.to(torch::kFloat32));

    torch::Tensor h = model->embed_tokens(tokens);
    AttentionContext ctx;
    ctx.cos = freqs.cos().to(h.scalar_type());
    ctx.sin = freqs.sin().to(h.scalar_type());
    ctx.past = past;
    ctx.fused = kernel != AttentionKernel::Plain;
    // Query i sits at position past + i and sees keys 0 .. past + i. The fused kernel needs no
    // mask without a cache (its causal flag), and a single query sees every key.
    if (time > 1 && (!ctx.fused || past > 0))
        ctx.mask = torch::ones({time, past + time},
                               torch::TensorOptions().dtype(torch::kBool).device(tokens.device()))
                       .triu(past + 1);
    for (std::size_t i = 0; i < model->layers->size(); ++i) {
        auto layer = model->layers->ptr<LlamaDecoderLayerImpl>(i);
        torch::Tensor* ck = cache != nullptr ? &cache->keys[i] : nullptr;
        torch::Tensor* cv = cache != nullptr ? &cache->values[i] : nullptr;
        if (gradient_checkpointing && cache == nullptr)
            h = engine::checkpointed(
                [layer, ctx](const torch::Tensor& x) {
                    return layer->forward(x, ctx, nullptr, nullptr);
                },
                h);
        else
            h = layer->forward(h, ctx, ck, cv);
    }
    return model->norm(h);
}

torch::Tensor LlamaForCausalLmImpl::loss(const torch::Tensor& tokens, const torch::Tensor& labels) {
    const torch::Tensor h = hidden_states(tokens, nullptr);
    const auto time = tokens.size(1);
    // The last position predicts nothing: its hidden state never meets the head.
    const torch::Tensor pred = h.narrow(1, 0, time - 1).reshape({-1, config.hidden_size});
    const torch::Tensor target = labels.narrow(1, 1, time - 1).reshape({-1});
    return linear_cross_entropy(pred, head_weight(), target, /*ignore_index=*/-100);
}

std::vector<std::pair<std::string, LoraLinear>> LlamaForCausalLmImpl::projections() {
    std::vector<std::pair<std::string, LoraLinear>> out;
    for (std::size_t i = 0; i < model->layers->size(); ++i) {
        auto layer = model->layers->ptr<LlamaDecoderLayerImpl>(i);
        const std::string p = "model.layers." + std::to_string(i) + ".";
        out.emplace_back(p + "self_attn.q_proj", layer->self_attn->q_proj);
        out.emplace_back(p + "self_attn.k_proj", layer->self_attn->k_proj);
        out.emplace_back(p + "self_attn.v_proj", layer->self_attn->v_proj);
        out.emplace_back(p + "self_attn.o_proj", layer->self_attn->o_proj);
        out.emplace_back(p + "mlp.gate_proj", layer->mlp->gate_proj);
        out.emplace_back(p + "mlp.up_proj", layer->mlp->up_proj);
        out.emplace_back(p + "mlp.down_proj", layer->mlp->down_proj);
    }
    return out;
}

int LlamaForCausalLmImpl::add_lora(const LoraSpec& given) {
    LoraSpec spec = given;
    spec.validate();
    for (auto& p : parameters())
        p.set_requires_grad(false);
    int n = 0;
    for (auto& [name, proj] : projections()) {
        const std::string kind = name.substr(name.rfind('.') + 1);
        if (std::find(spec.targets.begin(), spec.targets.end(), kind) == spec.targets.end())
            continue;
        proj->add_adapter(spec);
        ++n;
    }
    return n;
}

std::pair<std::int64_t, std::int64_t> LlamaForCausalLmImpl::quantize_nf4() {
    std::int64_t before = 0, after = 0;
    for (auto& [name, proj] : projections()) {
        if (!proj->is_quantized())
            before += proj->weight.numel() * static_cast<std::int64_t>(proj->weight.element_size());
        proj->quantize_nf4();
        after += proj->nf4.storage_bytes();
    }
    return {before, after};
}

void LlamaForCausalLmImpl::merge_lora() {
    for (auto& [name, proj] : projections())
        proj->merge();
}

std::map<std::string, torch::Tensor> LlamaForCausalLmImpl::base_state_dict() {
    std::map<std::string, torch::Tensor> out;
    for (const auto& item : named_parameters()) {
        if (item.key().find(".lora_") != std::string::npos) continue;
        out[item.key()] = item.value();
    }
    return out;
}

}  // namespace crucible::llm
