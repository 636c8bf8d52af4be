#pragma once
// The Stable Diffusion LoRA task `diffusion.sd_lora` (alias `sd_lora`), for SD 1.x and SDXL base
// models (an SDXL model is known by its UNet's text_time conditioning: both text encoders then
// condition it, and each image's original size, crop and bucket size go in as its time ids):
// kohya-style caption folders, cached VAE latents, epsilon (or v) prediction loss with optional
// min-SNR weights, LoRA on the UNet's transformer blocks and optionally on the text encoder(s)
// (train_text_encoder, with kohya's unet_lr / text_encoder_lr as the parameter groups `unet` and
// `text_encoder`), trained with the engine's AdamW (a weight EMA when asked for), optional gradient
// checkpointing, DDIM or Euler + CFG sample PNGs every N steps, and kohya `.safetensors`
// (optionally PEFT) output.
namespace crucible::sd {

inline constexpr const char* kSdLoraTaskId = "diffusion.sd_lora";

// Keeps the static registration linked into executables that only reference this header.
void ensure_sd_lora_registered();

}  // namespace crucible::sd
