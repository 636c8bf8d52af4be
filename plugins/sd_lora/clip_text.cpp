#include "plugins/sd_lora/clip_text.h"

#include <torch/torch.h>

#include <limits>
#include <utility>

#include "core/base/error.h"
#include "plugins/sd_lora/block_checkpoint.h"
#include "plugins/sd_lora/config_fields.h"

namespace crucible::sd {

ClipTextConfig ClipTextConfig::sd15() {
    return ClipTextConfig{};
}

ClipTextConfig ClipTextConfig::sdxl_bigg() {
    ClipTextConfig c;
    c.hidden_size = 1280;
    c.intermediate_size = 5120;
    c.num_hidden_layers = 32;
    c.num_attention_heads = 20;
    c.quick_gelu = false;
    c.projection_dim = 1280;
    return c;
}

ClipTextConfig ClipTextConfig::tiny() {
    ClipTextConfig c;
    c.vocab_size = 1000;
    c.hidden_size = 32;
    c.intermediate_size = 37;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    return c;
}

ClipTextConfig ClipTextConfig::from_hf_json(const Json& j0, const std::string& where) {
    if (!j0.is_object()) throw InputError(where, "the text encoder config is not a JSON object");
    // Full CLIPConfig files nest the text part under "text_config".
    const Json& j =
        j0.contains("text_config") && j0["text_config"].is_object() ? j0["text_config"] : j0;
    ClipTextConfig c;
    auto int_of = [&](const char* key, std::int64_t& out, std::int64_t lo, std::int64_t hi) {
        read_int_field(j, key, out, lo, hi, where);
    };
    int_of("vocab_size", c.vocab_size, 2, 10'000'000);
    int_of("hidden_size", c.hidden_size, 1, 65536);
    int_of("intermediate_size", c.intermediate_size, 1, 262144);
    int_of("num_hidden_layers", c.num_hidden_layers, 1, 256);
    int_of("num_attention_heads", c.num_attention_heads, 1, 1024);
    int_of("max_position_embeddings", c.max_position_embeddings, 1, 65536);
    if (c.hidden_size % c.num_attention_heads != 0)
        throw InputError(where, "'hidden_size' is not divisible by 'num_attention_heads'");
    if (j.contains("hidden_act")) {
        const std::string act =
            j["hidden_act"].is_string() ? j["hidden_act"].get<std::string>() : "";
        if (act == "quick_gelu")
            c.quick_gelu = true;
        else if (act == "gelu")
            c.quick_gelu = false;
        else
            throw InputError(where, "unsupported 'hidden_act' '" + act + "'");
    }
    if (j.contains("layer_norm_eps") && j["layer_norm_eps"].is_number())
        c.layer_norm_eps = j["layer_norm_eps"].get<double>();
    int_of("eos_token_id", c.eos_token_id, 0, c.vocab_size - 1);
    // Only CLIPTextModelWithProjection has the projection; CLIPTextConfig always carries a
    // projection_dim.
    const Json& arch = j0.contains("architectures") ? j0["architectures"] : Json();
    if (arch.is_array() && arch.size() == 1 && arch[0] == "CLIPTextModelWithProjection") {
        c.projection_dim = 512;
        int_of("projection_dim", c.projection_dim, 1, 65536);
    }
    return c;
}

Json ClipTextConfig::to_hf_json() const {
    Json j{
        {"architectures",
         Json::array({projection_dim > 0 ? "CLIPTextModelWithProjection" : "CLIPTextModel"})},
        {"model_type", "clip_text_model"},
        {"vocab_size", vocab_size},
        {"hidden_size", hidden_size},
        {"intermediate_size", intermediate_size},
        {"num_hidden_layers", num_hidden_layers},
        {"num_attention_heads", num_attention_heads},
        {"max_position_embeddings", max_position_embeddings},
        {"hidden_act", quick_gelu ? "quick_gelu" : "gelu"},
        {"layer_norm_eps", layer_norm_eps},
    };
    if (eos_token_id >= 0) j["eos_token_id"] = eos_token_id;
    if (projection_dim > 0) j["projection_dim"] = projection_dim;
    return j;
}

ClipLayerImpl::ClipLayerImpl(const ClipTextConfig& c)
    : heads(c.num_attention_heads), quick_gelu(c.quick_gelu) {
    const auto d = c.hidden_size;
    auto attn = register_module("self_attn", std::make_shared<torch::nn::Module>());
    k_proj = attn->register_module("k_proj", Linear(d, d));
    v_proj = attn->register_module("v_proj", Linear(d, d));
    q_proj = attn->register_module("q_proj", Linear(d, d));
    out_proj = attn->register_module("out_proj", Linear(d, d));
    layer_norm1 = register_module("layer_norm1", LayerNorm(d, c.layer_norm_eps));
    auto mlp = register_module("mlp", std::make_shared<torch::nn::Module>());
    fc1 = mlp->register_module("fc1", Linear(d, c.intermediate_size));
    fc2 = mlp->register_module("fc2", Linear(c.intermediate_size, d));
    layer_norm2 = register_module("layer_norm2", LayerNorm(d, c.layer_norm_eps));
}

torch::Tensor ClipLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
    torch::Tensor h = layer_norm1(x);
    const auto q = split_heads(q_proj(h), heads);
    const auto k = split_heads(k_proj(h), heads);
    const auto v = split_heads(v_proj(h), heads);
    h = x + out_proj(merge_heads(attention(q, k, v, mask)));
    torch::Tensor m = fc1(layer_norm2(h));
    m = quick_gelu ? m * torch::sigmoid(1.702 * m) : torch::gelu(m);
    return h + fc2(m);
}

ClipTextModelImpl::ClipTextModelImpl(ClipTextConfig c) : config(std::move(c)) {
    auto text_model = register_module("text_model", std::make_shared<torch::nn::Module>());
    auto embeddings =
        text_model->register_module("embeddings", std::make_shared<torch::nn::Module>());
    token_embedding = embeddings->register_module("token_embedding",
                                                  Embedding(config.vocab_size, config.hidden_size));
    position_embedding = embeddings->register_module(
        "position_embedding", Embedding(config.max_position_embeddings, config.hidden_size));
    auto encoder = text_model->register_module("encoder", std::make_shared<torch::nn::Module>());
    layers = encoder->register_module("layers", torch::nn::ModuleList());
    for (std::int64_t i = 0; i < config.num_hidden_layers; ++i)
        layers->push_back(ClipLayer(config));
    final_layer_norm = text_model->register_module(
        "final_layer_norm", LayerNorm(config.hidden_size, config.layer_norm_eps));
    if (config.projection_dim > 0)
        text_projection = register_module(
            "text_projection", Linear(config.hidden_size, config.projection_dim, /*bias=*/false));
}

torch::Tensor ClipTextModelImpl::run_layers(const torch::Tensor& ids, std::int64_t stop,
                                            torch::Tensor* before_last) {
    const auto t = ids.size(1);
    if (t > config.max_position_embeddings)
        throw InputError("prompt", "token sequence longer than the text encoder's " +
                                       std::to_string(config.max_position_embeddings) +
                                       " positions");
    const auto pos =
        torch::arange(t, torch::TensorOptions().dtype(torch::kLong).device(ids.device()));
    torch::Tensor h = token_embedding(ids) + position_embedding(pos).unsqueeze(0);
    const torch::Tensor mask =
        torch::full({t, t}, -std::numeric_limits<float>::infinity(), h.options()).triu(1);
    for (std::int64_t i = 0; i < stop; ++i) {
        if (before_last && i == stop - 1) *before_last = h;
        auto layer = std::dynamic_pointer_cast<ClipLayerImpl>(layers[static_cast<std::size_t>(i)]);
        if (gradient_checkpointing)
            h = checkpointed_block([layer](const torch::Tensor& x,
                                           const torch::Tensor& m) { return layer->forward(x, m); },
                                   h, mask, has_trainable_parameters(*layer));
        else
            h = layer->forward(h, mask);
    }
    return h;
}

torch::Tensor ClipTextModelImpl::forward(const torch::Tensor& ids, int clip_skip) {
    const auto n = static_cast<std::int64_t>(layers->size());
    return final_layer_norm(run_layers(ids, n - std::max<std::int64_t>(0, clip_skip - 1)));
}

ClipTextModelImpl::SdxlOutputs ClipTextModelImpl::encode_sdxl(const torch::Tensor& ids,
                                                              bool with_pooled) {
    const auto n = static_cast<std::int64_t>(layers->size());
    SdxlOutputs out;
    if (!with_pooled) {
        out.penultimate = run_layers(ids, n - 1);
        return out;
    }
    const torch::Tensor last = final_layer_norm(run_layers(ids, n, &out.penultimate));
    const std::int64_t eos_id =
        config.eos_token_id >= 0 ? config.eos_token_id : config.vocab_size - 1;
    const torch::Tensor eos =
        eos_id == 2 ? ids.argmax(-1) : (ids == eos_id).to(torch::kInt).argmax(-1);
    out.pooled = last.index({torch::arange(ids.size(0), eos.options()), eos});
    if (text_projection) out.pooled = text_projection(out.pooled);
    return out;
}

}  // namespace crucible::sd
