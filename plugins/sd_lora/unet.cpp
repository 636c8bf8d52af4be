#include "plugins/sd_lora/unet.h"

#include <torch/torch.h>

#include <algorithm>
#include <utility>

#include "core/base/error.h"
#include "plugins/sd_lora/block_checkpoint.h"
#include "plugins/sd_lora/blocks.h"
#include "plugins/sd_lora/config_fields.h"

namespace crucible::sd {

namespace {

// A ResNet (side input: the time embedding) or spatial transformer (side input: the text states)
// of a block list, checkpointed when asked (block_checkpoint.h).
template <class Block>
torch::Tensor run_block(const std::shared_ptr<torch::nn::Module>& module, const torch::Tensor& h,
                        const torch::Tensor& side, bool checkpoint) {
    auto block = std::dynamic_pointer_cast<Block>(module);
    if (!checkpoint) return block->forward(h, side);
    return checkpointed_block(
        [block](const torch::Tensor& x, const torch::Tensor& s) { return block->forward(x, s); }, h,
        side, has_trainable_parameters(*block));
}

// The spatial transformer of config block `block` (a down block, its mirrored up block, or for
// the last block the mid block) at `channels`.
Transformer2D spatial_transformer(const UNetConfig& c, std::size_t block, std::int64_t channels) {
    return Transformer2D(channels, c.attention_heads.at(block), c.cross_attention_dim,
                         c.norm_num_groups, c.transformer_layers.at(block),
                         c.use_linear_projection);
}

}  // namespace

struct TimestepEmbeddingImpl : torch::nn::Module {
    TimestepEmbeddingImpl(std::int64_t in, std::int64_t out) {
        linear_1 = register_module("linear_1", Linear(in, out));
        linear_2 = register_module("linear_2", Linear(out, out));
    }
    torch::Tensor forward(const torch::Tensor& x) { return linear_2(torch::silu(linear_1(x))); }
    Linear linear_1{nullptr}, linear_2{nullptr};
};

// CrossAttnDownBlock2D / DownBlock2D.
struct UNetDownBlockImpl : torch::nn::Module {
    UNetDownBlockImpl(const UNetConfig& c, std::size_t block, std::int64_t in, std::int64_t out,
                      bool downsample) {
        const bool cross = c.down_cross_attention.at(block);
        const std::int64_t temb = c.block_out_channels.at(0) * 4;
        resnets = register_module("resnets", torch::nn::ModuleList());
        if (cross) attentions = register_module("attentions", torch::nn::ModuleList());
        for (std::int64_t i = 0; i < c.layers_per_block; ++i) {
            resnets->push_back(
                ResnetBlock(i == 0 ? in : out, out, temb, c.norm_num_groups, c.norm_eps));
            if (cross) attentions->push_back(spatial_transformer(c, block, out));
        }
        if (downsample) {
            downsamplers = register_module("downsamplers", torch::nn::ModuleList());
            downsamplers->push_back(Downsample(out, 1));
        }
    }
    torch::Tensor forward(torch::Tensor h, const torch::Tensor& temb, const torch::Tensor& ctx,
                          std::vector<torch::Tensor>& skips, bool checkpoint) {
        for (std::size_t i = 0; i < resnets->size(); ++i) {
            h = run_block<ResnetBlockImpl>(resnets[i], h, temb, checkpoint);
            if (attentions) h = run_block<Transformer2DImpl>(attentions[i], h, ctx, checkpoint);
            skips.push_back(h);
        }
        if (downsamplers) {
            h = downsamplers[0]->as<DownsampleImpl>()->forward(h);
            skips.push_back(h);
        }
        return h;
    }
    torch::nn::ModuleList resnets{nullptr}, attentions{nullptr}, downsamplers{nullptr};
};

// UNetMidBlock2DCrossAttn: resnet, (attention, resnet).
struct UNetMidBlockImpl : torch::nn::Module {
    UNetMidBlockImpl(const UNetConfig& c, std::int64_t ch) {
        const std::int64_t temb = c.block_out_channels.at(0) * 4;
        attentions = register_module("attentions", torch::nn::ModuleList());
        resnets = register_module("resnets", torch::nn::ModuleList());
        resnets->push_back(ResnetBlock(ch, ch, temb, c.norm_num_groups, c.norm_eps));
        attentions->push_back(spatial_transformer(c, c.block_out_channels.size() - 1, ch));
        resnets->push_back(ResnetBlock(ch, ch, temb, c.norm_num_groups, c.norm_eps));
    }
    torch::Tensor forward(torch::Tensor h, const torch::Tensor& temb, const torch::Tensor& ctx,
                          bool checkpoint) {
        h = run_block<ResnetBlockImpl>(resnets[0], h, temb, checkpoint);
        h = run_block<Transformer2DImpl>(attentions[0], h, ctx, checkpoint);
        return run_block<ResnetBlockImpl>(resnets[1], h, temb, checkpoint);
    }
    torch::nn::ModuleList attentions{nullptr}, resnets{nullptr};
};

// UpBlock2D / CrossAttnUpBlock2D.
struct UNetUpBlockImpl : torch::nn::Module {
    // `block`: the index of the mirrored down block.
    UNetUpBlockImpl(const UNetConfig& c, std::size_t block, std::int64_t in, std::int64_t prev_out,
                    std::int64_t out, bool upsample) {
        const bool cross = c.down_cross_attention.at(block);
        const std::int64_t temb = c.block_out_channels.at(0) * 4;
        const std::int64_t layers = c.layers_per_block + 1;
        resnets = register_module("resnets", torch::nn::ModuleList());
        if (cross) attentions = register_module("attentions", torch::nn::ModuleList());
        for (std::int64_t i = 0; i < layers; ++i) {
            const std::int64_t skip = i == layers - 1 ? in : out;
            const std::int64_t res_in = i == 0 ? prev_out : out;
            resnets->push_back(
                ResnetBlock(res_in + skip, out, temb, c.norm_num_groups, c.norm_eps));
            if (cross) attentions->push_back(spatial_transformer(c, block, out));
        }
        if (upsample) {
            upsamplers = register_module("upsamplers", torch::nn::ModuleList());
            upsamplers->push_back(Upsample(out));
        }
    }
    torch::Tensor forward(torch::Tensor h, const torch::Tensor& temb, const torch::Tensor& ctx,
                          std::vector<torch::Tensor>& skips, bool checkpoint) {
        for (std::size_t i = 0; i < resnets->size(); ++i) {
            h = torch::cat({h, skips.back()}, 1);
            skips.pop_back();
            h = run_block<ResnetBlockImpl>(resnets[i], h, temb, checkpoint);
            if (attentions) h = run_block<Transformer2DImpl>(attentions[i], h, ctx, checkpoint);
        }
        if (upsamplers) {
            std::optional<std::vector<std::int64_t>> size;
            if (!skips.empty())
                size = std::vector<std::int64_t>{skips.back().size(2), skips.back().size(3)};
            h = upsamplers[0]->as<UpsampleImpl>()->forward(h, size);
        }
        return h;
    }
    torch::nn::ModuleList resnets{nullptr}, attentions{nullptr}, upsamplers{nullptr};
};

std::int64_t UNetConfig::pooled_text_dim() const {
    return text_time_conditioning()
               ? projection_class_embeddings_input_dim - kSdxlTimeIds * addition_time_embed_dim
               : 0;
}

UNetConfig UNetConfig::sd15() {
    return UNetConfig{};
}

UNetConfig UNetConfig::sdxl() {
    UNetConfig c;
    c.block_out_channels = {320, 640, 1280};
    c.down_cross_attention = {false, true, true};
    c.attention_heads = {5, 10, 20};
    c.transformer_layers = {1, 2, 10};
    c.cross_attention_dim = 2048;
    c.use_linear_projection = true;
    c.addition_time_embed_dim = 256;
    c.projection_class_embeddings_input_dim = 1280 + kSdxlTimeIds * 256;
    c.sample_size = 128;
    return c;
}

UNetConfig UNetConfig::tiny() {
    UNetConfig c;
    c.block_out_channels = {32, 64};
    c.down_cross_attention = {true, false};
    c.attention_heads = {8, 8};
    c.transformer_layers = {1, 1};
    c.cross_attention_dim = 32;
    c.sample_size = 32;
    return c;
}

UNetConfig UNetConfig::tiny_sdxl() {
    UNetConfig c = tiny();
    c.down_cross_attention = {false, true};
    c.attention_heads = {2, 4};
    c.transformer_layers = {1, 2};
    c.use_linear_projection = true;
    c.cross_attention_dim = 64;
    c.addition_time_embed_dim = 8;
    c.projection_class_embeddings_input_dim = 32 + kSdxlTimeIds * 8;
    return c;
}

UNetConfig UNetConfig::from_diffusers_json(const Json& j, const std::string& where) {
    if (!j.is_object()) throw InputError(where, "the UNet config is not a JSON object");
    UNetConfig c;
    auto int_of = [&](const char* key, std::int64_t& out, std::int64_t lo, std::int64_t hi) {
        read_int_field(j, key, out, lo, hi, where);
    };
    int_of("in_channels", c.in_channels, 1, 64);
    int_of("out_channels", c.out_channels, 1, 64);
    int_of("layers_per_block", c.layers_per_block, 1, 8);
    int_of("cross_attention_dim", c.cross_attention_dim, 1, 8192);
    int_of("norm_num_groups", c.norm_num_groups, 1, 1024);
    int_of("sample_size", c.sample_size, 1, 1024);
    if (j.contains("norm_eps") && j["norm_eps"].is_number())
        c.norm_eps = j["norm_eps"].get<double>();
    read_block_out_channels(j, c.block_out_channels, where);
    const std::size_t blocks = c.block_out_channels.size();
    // diffusers names the head count "attention_head_dim" in SD 1.x and SDXL configs; a newer
    // "num_attention_heads" wins when present. Either may be one number or one per block.
    c.attention_heads.assign(blocks, 8);
    c.transformer_layers.assign(blocks, 1);
    read_per_block_field(j, "attention_head_dim", c.attention_heads, blocks, 1, 1024, where);
    read_per_block_field(j, "num_attention_heads", c.attention_heads, blocks, 1, 1024, where);
    read_per_block_field(j, "transformer_layers_per_block", c.transformer_layers, blocks, 1, 64,
                         where);
    c.down_cross_attention.assign(blocks, true);
    if (blocks > 1) c.down_cross_attention.back() = false;
    if (j.contains("down_block_types")) {
        const Json& d = j["down_block_types"];
        if (!d.is_array() || d.size() != blocks)
            throw InputError(where, "'down_block_types' must list one type per block_out_channels");
        for (std::size_t i = 0; i < d.size(); ++i) {
            const std::string t = d[i].is_string() ? d[i].get<std::string>() : "";
            if (t == "CrossAttnDownBlock2D")
                c.down_cross_attention[i] = true;
            else if (t == "DownBlock2D")
                c.down_cross_attention[i] = false;
            else
                throw InputError(where, "unsupported down block type '" + t + "'");
        }
    }
    if (j.contains("up_block_types")) {
        const Json& u = j["up_block_types"];
        if (!u.is_array() || u.size() != blocks)
            throw InputError(where, "'up_block_types' must list one type per block_out_channels");
        for (std::size_t i = 0; i < u.size(); ++i) {
            const bool cross = c.down_cross_attention[u.size() - 1 - i];
            const std::string want = cross ? "CrossAttnUpBlock2D" : "UpBlock2D";
            if (!u[i].is_string() || u[i].get<std::string>() != want)
                throw InputError(where, "up block " + std::to_string(i) + " must be " + want +
                                            " to mirror the down blocks");
        }
    }
    if (j.contains("mid_block_type") && !j["mid_block_type"].is_null() &&
        j["mid_block_type"] != "UNetMidBlock2DCrossAttn")
        throw InputError(where, "'mid_block_type' must be UNetMidBlock2DCrossAttn");
    if (j.contains("use_linear_projection") && !j["use_linear_projection"].is_null()) {
        if (!j["use_linear_projection"].is_boolean())
            throw InputError(where, "'use_linear_projection' must be true or false");
        c.use_linear_projection = j["use_linear_projection"].get<bool>();
    }
    if (j.contains("addition_embed_type") && !j["addition_embed_type"].is_null()) {
        if (j["addition_embed_type"] != "text_time")
            throw InputError(where,
                             "'addition_embed_type' other than \"text_time\" (SDXL) is "
                             "not supported");
        c.addition_time_embed_dim = -1;
        c.projection_class_embeddings_input_dim = -1;
        int_of("addition_time_embed_dim", c.addition_time_embed_dim, 2, 4096);
        int_of("projection_class_embeddings_input_dim", c.projection_class_embeddings_input_dim, 1,
               65536);
        if (c.addition_time_embed_dim < 0 || c.addition_time_embed_dim % 2 != 0 ||
            c.projection_class_embeddings_input_dim <= kSdxlTimeIds * c.addition_time_embed_dim)
            throw InputError(where,
                             "\"text_time\" needs an even 'addition_time_embed_dim' and a "
                             "'projection_class_embeddings_input_dim' larger than six times it");
    }
    for (const char* key : {"only_cross_attention", "upcast_attention", "center_input_sample",
                            "dual_cross_attention", "class_embeddings_concat"}) {
        if (j.contains(key) && j[key].is_boolean() && j[key].get<bool>())
            throw InputError(where, std::string("'") + key + "' = true is not supported");
    }
    for (const char* key : {"class_embed_type", "time_cond_proj_dim", "encoder_hid_dim_type",
                            "reverse_transformer_layers_per_block", "num_class_embeds"}) {
        if (j.contains(key) && !j[key].is_null())
            throw InputError(
                where, std::string("'") + key + "' is not supported (set: " + j[key].dump() + ")");
    }
    return c;
}

Json UNetConfig::to_diffusers_json() const {
    Json down = Json::array(), up = Json::array();
    for (bool cross : down_cross_attention)
        down.push_back(cross ? "CrossAttnDownBlock2D" : "DownBlock2D");
    for (auto it = down_cross_attention.rbegin(); it != down_cross_attention.rend(); ++it)
        up.push_back(*it ? "CrossAttnUpBlock2D" : "UpBlock2D");
    // One number when every block has the same, as SD 1.x configs write it.
    auto per_block = [](const std::vector<std::int64_t>& v) {
        const bool same = std::all_of(v.begin(), v.end(), [&](auto x) { return x == v.front(); });
        return same && !v.empty() ? Json(v.front()) : Json(v);
    };
    Json j{{"_class_name", "UNet2DConditionModel"},
           {"sample_size", sample_size},
           {"in_channels", in_channels},
           {"out_channels", out_channels},
           {"down_block_types", down},
           {"up_block_types", up},
           {"block_out_channels", block_out_channels},
           {"layers_per_block", layers_per_block},
           {"cross_attention_dim", cross_attention_dim},
           {"attention_head_dim", per_block(attention_heads)},
           {"transformer_layers_per_block", per_block(transformer_layers)},
           {"use_linear_projection", use_linear_projection},
           {"norm_num_groups", norm_num_groups},
           {"norm_eps", norm_eps}};
    if (text_time_conditioning()) {
        j["addition_embed_type"] = "text_time";
        j["addition_time_embed_dim"] = addition_time_embed_dim;
        j["projection_class_embeddings_input_dim"] = projection_class_embeddings_input_dim;
    }
    return j;
}

UNetImpl::UNetImpl(UNetConfig c) : config(std::move(c)) {
    const auto& ch = config.block_out_channels;
    const std::size_t n = ch.size();
    if (ch.empty() || config.down_cross_attention.size() != n ||
        config.attention_heads.size() != n || config.transformer_layers.size() != n)
        throw InputError("unet config",
                         "one down block type, head count and transformer depth per "
                         "block_out_channels entry");
    const std::int64_t temb = ch[0] * 4;
    conv_in = register_module("conv_in", Conv2d(config.in_channels, ch[0], 3, 1, 1));
    time_embedding =
        register_module("time_embedding", std::make_shared<TimestepEmbeddingImpl>(ch[0], temb));
    if (config.text_time_conditioning())
        add_embedding = register_module("add_embedding",
                                        std::make_shared<TimestepEmbeddingImpl>(
                                            config.projection_class_embeddings_input_dim, temb));
    down_blocks = register_module("down_blocks", torch::nn::ModuleList());
    std::int64_t out = ch[0];
    for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t in = out;
        out = ch[i];
        down_blocks->push_back(std::make_shared<UNetDownBlockImpl>(config, i, in, out, i + 1 < n));
    }
    up_blocks = register_module("up_blocks", torch::nn::ModuleList());
    out = ch[n - 1];
    for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t prev = out;
        out = ch[n - 1 - i];
        const std::int64_t in = ch[n - 1 - std::min(i + 1, n - 1)];
        up_blocks->push_back(
            std::make_shared<UNetUpBlockImpl>(config, n - 1 - i, in, prev, out, i + 1 < n));
    }
    mid_block = register_module("mid_block", std::make_shared<UNetMidBlockImpl>(config, ch[n - 1]));
    conv_norm_out =
        register_module("conv_norm_out", GroupNorm(config.norm_num_groups, ch[0], config.norm_eps));
    conv_out = register_module("conv_out", Conv2d(ch[0], config.out_channels, 3, 1, 1));
}

torch::Tensor UNetImpl::forward(const torch::Tensor& sample, const torch::Tensor& timesteps,
                                const torch::Tensor& context, const torch::Tensor& text_embeds,
                                const torch::Tensor& time_ids) {
    // Inputs take the weights' precision (a fp16 / bf16 base model, fed fp32 latents by the
    // sampler), and the prediction goes back in the input's.
    const auto dtype = conv_in->weight.scalar_type();
    const torch::Tensor x = sample.to(dtype);
    const torch::Tensor ctx = context.to(dtype);
    torch::Tensor t = timesteps;
    if (t.dim() == 0) t = t.reshape({1});
    const std::int64_t batch = sample.size(0);
    t = t.to(sample.device()).expand({batch});
    torch::Tensor temb = timestep_embedding(t, config.block_out_channels[0]).to(dtype);
    temb = time_embedding->forward(temb);
    if (config.text_time_conditioning()) {
        if (!text_embeds.defined() || !time_ids.defined() ||
            text_embeds.sizes() != torch::IntArrayRef{batch, config.pooled_text_dim()} ||
            time_ids.sizes() != torch::IntArrayRef{batch, kSdxlTimeIds})
            throw Error("the SDXL UNet needs text_embeds [" + std::to_string(batch) + ", " +
                        std::to_string(config.pooled_text_dim()) + "] and time_ids [" +
                        std::to_string(batch) + ", 6]");
        const torch::Tensor time_embeds =
            timestep_embedding(time_ids.flatten(), config.addition_time_embed_dim)
                .reshape({batch, -1});
        const torch::Tensor add = torch::cat({text_embeds.to(torch::kFloat), time_embeds}, -1);
        temb = temb + add_embedding->forward(add.to(dtype));
    } else if (text_embeds.defined() || time_ids.defined()) {
        throw Error("text_embeds / time_ids given to a UNet without the text_time add embedding");
    }

    torch::Tensor h = conv_in(x);
    std::vector<torch::Tensor> skips{h};
    const bool checkpoint = gradient_checkpointing;
    for (const auto& block : *down_blocks)
        h = block->as<UNetDownBlockImpl>()->forward(h, temb, ctx, skips, checkpoint);
    h = mid_block->forward(h, temb, ctx, checkpoint);
    for (const auto& block : *up_blocks)
        h = block->as<UNetUpBlockImpl>()->forward(h, temb, ctx, skips, checkpoint);
    return conv_out(torch::silu(conv_norm_out(h))).to(sample.scalar_type());
}

}  // namespace crucible::sd
