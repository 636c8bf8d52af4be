#pragma once
// Sampling for the preview images (issue "Samples"): deterministic DDIM or Euler with
// classifier-free guidance, from seeded noise; latents decoded by the VAE into 8-bit RGB PNGs.
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "plugins/sd_lora/scheduler.h"
#include "plugins/sd_lora/text_conditioning.h"

namespace crucible::sd {

struct UNetImpl;
struct AutoencoderKLImpl;

// Predicts the noise in x_t at integer timestep t.
using NoisePredictor = std::function<torch::Tensor(const torch::Tensor& x_t, std::int64_t t)>;

// Runs DDIM from `noise` (x_T) over `steps` inference steps (steps_offset 1) and returns x_0.
torch::Tensor ddim_sample(const NoiseSchedule& schedule, const NoisePredictor& predict,
                          const torch::Tensor& noise, std::int64_t steps);

// Euler discrete sampling as diffusers' EulerDiscreteScheduler computes it for an epsilon model
// (s_churn 0): the DDIM timesteps above ("leading" spacing, steps_offset 1: SD 1.x's scheduler
// config, and the same timesteps for both samplers, so they differ only in the update),
// sigma_t = sqrt((1 - alphas_cumprod[t]) / alphas_cumprod[t]) followed by a final 0; x starts at
// noise · sqrt(sigma_max² + 1) (diffusers' init_noise_sigma for "leading"), the model sees
// x / sqrt(sigma² + 1) (which is the DDPM x_t of its timestep), and
// x_{i+1} = x_i + (sigma_{i+1} - sigma_i) · eps. Returns x at sigma 0 (x_0).
torch::Tensor euler_sample(const NoiseSchedule& schedule, const NoisePredictor& predict,
                           const torch::Tensor& noise, std::int64_t steps);

// The Euler sigmas for `steps` inference steps, descending, with the final 0 (steps + 1 values).
std::vector<double> euler_sigmas(const NoiseSchedule& schedule, std::int64_t steps);

enum class SamplerKind { Ddim, Euler };
// "ddim" or "euler"; anything else is an InputError on `sample_sampler`.
SamplerKind sampler_kind(const std::string& name);
torch::Tensor sample_latents(SamplerKind kind, const NoiseSchedule& schedule,
                             const NoisePredictor& predict, const torch::Tensor& noise,
                             std::int64_t steps);

// A v-prediction model as a noise predictor: eps = sqrt(a_t)·v + sqrt(1 - a_t)·x_t.
NoisePredictor epsilon_from_velocity(const NoiseSchedule& schedule, NoisePredictor predict_v);

// The UNet as a guided predictor: eps_u + guidance · (eps_c − eps_u), one batched forward.
// `cond` / `uncond`: text states [B, T, D] (and for SDXL the pooled embeddings [B, P]);
// `time_ids` [B, 6]: SDXL's size and crop conditioning (undefined for SD 1.x).
NoisePredictor guided_unet(UNetImpl& unet, const TextConditioning& cond,
                           const TextConditioning& uncond, const torch::Tensor& time_ids,
                           double guidance);

// VAE decode of latents (already divided by the scaling factor) to [B, H, W, 3] uint8 RGB on CPU.
torch::Tensor decode_to_rgb8(AutoencoderKLImpl& vae, const torch::Tensor& latents);

// Writes one [H, W, 3] uint8 RGB image as PNG (atomically; non-ASCII paths work).
void write_rgb8_png(const std::filesystem::path& path, const torch::Tensor& rgb);

}  // namespace crucible::sd
