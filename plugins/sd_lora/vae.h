#pragma once
// AutoencoderKL of SD 1.x (diffusers layout): the encoder for training latents, the decoder for
// sample images. Latents the UNet sees are posterior samples times scaling_factor (0.18215).
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/json.h"
#include "plugins/sd_lora/nn.h"

namespace crucible::sd {

struct VaeConfig {
    std::int64_t in_channels = 3, out_channels = 3, latent_channels = 4;
    std::vector<std::int64_t> block_out_channels{128, 256, 512, 512};
    std::int64_t layers_per_block = 2;
    std::int64_t norm_num_groups = 32;
    std::int64_t sample_size = 512;
    double scaling_factor = 0.18215;

    static VaeConfig from_diffusers_json(const Json& config, const std::string& where);
    Json to_diffusers_json() const;
    static VaeConfig sd15();
    static VaeConfig tiny();  // [32, 64], one resnet per encoder block (diffusers' test config)
};

struct VaeEncoderImpl;
struct VaeDecoderImpl;

struct Posterior {
    torch::Tensor mean, logvar;  // logvar clamped to [-30, 20]
    // mean + exp(logvar / 2) · noise
    torch::Tensor sample(const torch::Tensor& noise) const;
};

struct AutoencoderKLImpl : torch::nn::Module {
    explicit AutoencoderKLImpl(VaeConfig config);
    // image [B, 3, H, W] in [-1, 1] -> posterior over [B, latent, H/f, W/f].
    Posterior encode(const torch::Tensor& image);
    // latent (unscaled) -> image in about [-1, 1].
    torch::Tensor decode(const torch::Tensor& latent);
    VaeConfig config;
    std::shared_ptr<VaeEncoderImpl> encoder;
    std::shared_ptr<VaeDecoderImpl> decoder;
    Conv2d quant_conv{nullptr}, post_quant_conv{nullptr};
};
TORCH_MODULE(AutoencoderKL);

}  // namespace crucible::sd
