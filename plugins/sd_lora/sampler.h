#pragma once
// Sampling for the preview images (issue "Samples"): deterministic DDIM with classifier-free
// guidance, from seeded noise; latents decoded by the VAE into 8-bit RGB PNGs.
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "plugins/sd_lora/scheduler.h"

namespace crucible::sd {

struct UNetImpl;
struct AutoencoderKLImpl;

// Predicts the noise in x_t at integer timestep t.
using NoisePredictor = std::function<torch::Tensor(const torch::Tensor& x_t, std::int64_t t)>;

// Runs DDIM from `noise` (x_T) over `steps` inference steps (steps_offset 1) and returns x_0.
torch::Tensor ddim_sample(const NoiseSchedule& schedule, const NoisePredictor& predict,
                          const torch::Tensor& noise, std::int64_t steps);

// The UNet as a guided predictor: eps_u + guidance · (eps_c − eps_u), one batched forward.
// `cond` / `uncond` are text states [B, T, D].
NoisePredictor guided_unet(UNetImpl& unet, const torch::Tensor& cond, const torch::Tensor& uncond,
                           double guidance);

// VAE decode of latents (already divided by the scaling factor) to [B, H, W, 3] uint8 RGB on CPU.
torch::Tensor decode_to_rgb8(AutoencoderKLImpl& vae, const torch::Tensor& latents);

// Writes one [H, W, 3] uint8 RGB image as PNG (atomically; non-ASCII paths work).
void write_rgb8_png(const std::filesystem::path& path, const torch::Tensor& rgb);

}  // namespace crucible::sd
