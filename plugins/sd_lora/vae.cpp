#include "plugins/sd_lora/vae.h"

#include <torch/torch.h>

#include <utility>

#include "core/base/error.h"
#include "plugins/sd_lora/blocks.h"
#include "plugins/sd_lora/config_fields.h"

namespace crucible::sd {
namespace {
constexpr double kVaeEps = 1e-6;
}

// UNetMidBlock2D without time embedding: resnet, attention, resnet.
struct VaeMidBlockImpl : torch::nn::Module {
    VaeMidBlockImpl(std::int64_t ch, std::int64_t groups) {
        attentions = register_module("attentions", torch::nn::ModuleList());
        resnets = register_module("resnets", torch::nn::ModuleList());
        resnets->push_back(ResnetBlock(ch, ch, 0, groups, kVaeEps));
        attentions->push_back(SpatialSelfAttention(ch, groups, kVaeEps));
        resnets->push_back(ResnetBlock(ch, ch, 0, groups, kVaeEps));
    }
    torch::Tensor forward(torch::Tensor h) {
        h = resnets[0]->as<ResnetBlockImpl>()->forward(h);
        h = attentions[0]->as<SpatialSelfAttentionImpl>()->forward(h);
        return resnets[1]->as<ResnetBlockImpl>()->forward(h);
    }
    torch::nn::ModuleList attentions{nullptr}, resnets{nullptr};
};

// DownEncoderBlock2D / UpDecoderBlock2D: resnets then an optional down/up sampler.
struct VaeBlockImpl : torch::nn::Module {
    VaeBlockImpl(std::int64_t in, std::int64_t out, std::int64_t layers, std::int64_t groups,
                 bool down, bool resample) {
        resnets = register_module("resnets", torch::nn::ModuleList());
        for (std::int64_t i = 0; i < layers; ++i)
            resnets->push_back(ResnetBlock(i == 0 ? in : out, out, 0, groups, kVaeEps));
        if (resample && down) {
            downsamplers = register_module("downsamplers", torch::nn::ModuleList());
            downsamplers->push_back(Downsample(out, 0));
        } else if (resample) {
            upsamplers = register_module("upsamplers", torch::nn::ModuleList());
            upsamplers->push_back(Upsample(out));
        }
    }
    torch::Tensor forward(torch::Tensor h) {
        for (const auto& r : *resnets)
            h = r->as<ResnetBlockImpl>()->forward(h);
        if (downsamplers) h = downsamplers[0]->as<DownsampleImpl>()->forward(h);
        if (upsamplers) h = upsamplers[0]->as<UpsampleImpl>()->forward(h);
        return h;
    }
    torch::nn::ModuleList resnets{nullptr}, downsamplers{nullptr}, upsamplers{nullptr};
};

struct VaeEncoderImpl : torch::nn::Module {
    explicit VaeEncoderImpl(const VaeConfig& c) {
        const auto& ch = c.block_out_channels;
        conv_in = register_module("conv_in", Conv2d(c.in_channels, ch[0], 3, 1, 1));
        down_blocks = register_module("down_blocks", torch::nn::ModuleList());
        std::int64_t out = ch[0];
        for (std::size_t i = 0; i < ch.size(); ++i) {
            const std::int64_t in = out;
            out = ch[i];
            down_blocks->push_back(std::make_shared<VaeBlockImpl>(
                in, out, c.layers_per_block, c.norm_num_groups, true, i + 1 < ch.size()));
        }
        mid_block = register_module(
            "mid_block", std::make_shared<VaeMidBlockImpl>(ch.back(), c.norm_num_groups));
        conv_norm_out =
            register_module("conv_norm_out", GroupNorm(c.norm_num_groups, ch.back(), kVaeEps));
        conv_out = register_module("conv_out", Conv2d(ch.back(), 2 * c.latent_channels, 3, 1, 1));
    }
    torch::Tensor forward(const torch::Tensor& x) {
        torch::Tensor h = conv_in(x);
        for (const auto& b : *down_blocks)
            h = b->as<VaeBlockImpl>()->forward(h);
        h = mid_block->forward(h);
        return conv_out(torch::silu(conv_norm_out(h)));
    }
    Conv2d conv_in{nullptr}, conv_out{nullptr};
    torch::nn::ModuleList down_blocks{nullptr};
    std::shared_ptr<VaeMidBlockImpl> mid_block;
    GroupNorm conv_norm_out{nullptr};
};

struct VaeDecoderImpl : torch::nn::Module {
    explicit VaeDecoderImpl(const VaeConfig& c) {
        const auto& ch = c.block_out_channels;
        const std::size_t n = ch.size();
        conv_in = register_module("conv_in", Conv2d(c.latent_channels, ch.back(), 3, 1, 1));
        mid_block = register_module(
            "mid_block", std::make_shared<VaeMidBlockImpl>(ch.back(), c.norm_num_groups));
        up_blocks = register_module("up_blocks", torch::nn::ModuleList());
        std::int64_t out = ch[n - 1];
        for (std::size_t i = 0; i < n; ++i) {
            const std::int64_t prev = out;
            out = ch[n - 1 - i];
            up_blocks->push_back(std::make_shared<VaeBlockImpl>(
                prev, out, c.layers_per_block + 1, c.norm_num_groups, false, i + 1 < n));
        }
        conv_norm_out =
            register_module("conv_norm_out", GroupNorm(c.norm_num_groups, ch[0], kVaeEps));
        conv_out = register_module("conv_out", Conv2d(ch[0], c.out_channels, 3, 1, 1));
    }
    torch::Tensor forward(const torch::Tensor& z) {
        torch::Tensor h = mid_block->forward(conv_in(z));
        for (const auto& b : *up_blocks)
            h = b->as<VaeBlockImpl>()->forward(h);
        return conv_out(torch::silu(conv_norm_out(h)));
    }
    Conv2d conv_in{nullptr}, conv_out{nullptr};
    std::shared_ptr<VaeMidBlockImpl> mid_block;
    torch::nn::ModuleList up_blocks{nullptr};
    GroupNorm conv_norm_out{nullptr};
};

torch::Tensor Posterior::sample(const torch::Tensor& noise) const {
    return mean + torch::exp(0.5 * logvar) * noise;
}

VaeConfig VaeConfig::sd15() {
    return VaeConfig{};
}

VaeConfig VaeConfig::tiny() {
    VaeConfig c;
    c.block_out_channels = {32, 64};
    c.layers_per_block = 1;
    c.sample_size = 64;
    return c;
}

VaeConfig VaeConfig::from_diffusers_json(const Json& j, const std::string& where) {
    if (!j.is_object()) throw InputError(where, "the VAE config is not a JSON object");
    VaeConfig c;
    auto int_of = [&](const char* key, std::int64_t& out, std::int64_t lo, std::int64_t hi) {
        read_int_field(j, key, out, lo, hi, where);
    };
    int_of("in_channels", c.in_channels, 1, 64);
    int_of("out_channels", c.out_channels, 1, 64);
    int_of("latent_channels", c.latent_channels, 1, 64);
    int_of("layers_per_block", c.layers_per_block, 1, 8);
    int_of("norm_num_groups", c.norm_num_groups, 1, 1024);
    int_of("sample_size", c.sample_size, 1, 8192);
    if (!j.contains("layers_per_block")) c.layers_per_block = 1;  // diffusers' default
    if (j.contains("scaling_factor") && j["scaling_factor"].is_number())
        c.scaling_factor = j["scaling_factor"].get<double>();
    read_block_out_channels(j, c.block_out_channels, where);
    return c;
}

Json VaeConfig::to_diffusers_json() const {
    Json down = Json::array(), up = Json::array();
    for (std::size_t i = 0; i < block_out_channels.size(); ++i) {
        down.push_back("DownEncoderBlock2D");
        up.push_back("UpDecoderBlock2D");
    }
    return Json{{"_class_name", "AutoencoderKL"},
                {"in_channels", in_channels},
                {"out_channels", out_channels},
                {"latent_channels", latent_channels},
                {"down_block_types", down},
                {"up_block_types", up},
                {"block_out_channels", block_out_channels},
                {"layers_per_block", layers_per_block},
                {"norm_num_groups", norm_num_groups},
                {"sample_size", sample_size},
                {"scaling_factor", scaling_factor}};
}

AutoencoderKLImpl::AutoencoderKLImpl(VaeConfig c) : config(std::move(c)) {
    if (config.block_out_channels.empty())
        throw InputError("vae config", "block_out_channels is empty");
    encoder = register_module("encoder", std::make_shared<VaeEncoderImpl>(config));
    decoder = register_module("decoder", std::make_shared<VaeDecoderImpl>(config));
    const std::int64_t l = config.latent_channels;
    quant_conv = register_module("quant_conv", Conv2d(2 * l, 2 * l, 1));
    post_quant_conv = register_module("post_quant_conv", Conv2d(l, l, 1));
}

Posterior AutoencoderKLImpl::encode(const torch::Tensor& image) {
    const torch::Tensor moments = quant_conv(encoder->forward(image));
    const auto parts = moments.chunk(2, 1);
    return Posterior{parts[0], torch::clamp(parts[1], -30.0, 20.0)};
}

torch::Tensor AutoencoderKLImpl::decode(const torch::Tensor& latent) {
    return decoder->forward(post_quant_conv(latent));
}

}  // namespace crucible::sd
