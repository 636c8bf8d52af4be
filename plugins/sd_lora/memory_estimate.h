#pragma once
// The predicted peak memory of a diffusion.sd_lora step (core/engine/memory_estimate.h), SD 1.x
// or SDXL, from the model configs alone (the models are laid out on the meta device: nothing is
// read or allocated):
// - weights: UNet and text encoders in the base precision, the VAE in fp32 (all stay on the
//   device during the run);
// - adapters: fp32 matrices with their gradients and AdamW's two moments (16 bytes a value);
// - activations kept for backward, per UNet level: each ResNet and each transformer block keeps
//   a multiple of its feature map (batch x pixels x channels), the multiples fitted to LibTorch's
//   live tensor bytes on the CPU (tests/sd_lora/memory_test.cpp); nothing is kept before the
//   first adapter (SDXL's first level has no attention, so its down ResNets keep nothing); with
//   gradient checkpointing each block keeps its input, and the largest is recomputed in backward
//   with its gradients beside it;
// - with train_text_encoder, the encoders' activations over 77 tokens.
// Latents and text states are cached, so the VAE and the encoders (when frozen) run no step.
#include <torch/torch.h>

#include <cstdint>
#include <optional>

#include "core/engine/memory_estimate.h"
#include "plugins/sd_lora/clip_text.h"
#include "plugins/sd_lora/unet.h"
#include "plugins/sd_lora/vae.h"

namespace crucible::sd {

struct SdMemoryPlan {
    UNetConfig unet;
    ClipTextConfig text;
    std::optional<ClipTextConfig> text_2;  // SDXL
    VaeConfig vae;
    torch::ScalarType base_dtype = torch::kFloat32;  // base_precision
    bool amp = false;  // activations in half precision (fp16 / bf16 autocast)
    std::int64_t batch = 1;
    std::int64_t height = 512, width = 512;  // pixels: the largest bucket's sides
    std::int64_t rank = 8;
    bool train_text_encoder = false;
    bool gradient_checkpointing = false;
};

engine::MemoryEstimate estimate_sd_memory(const SdMemoryPlan& plan);

}  // namespace crucible::sd
