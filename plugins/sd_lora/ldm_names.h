#pragma once
// Names of the original single-file (LDM / CompVis) checkpoints for the diffusers-layout models
// (SPECS.md "Stable Diffusion 1.x training"): derived from the block structure, not from a table,
// so any layers_per_block / channel count maps. No LibTorch here.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace crucible::sd {

inline constexpr const char* kLdmUNetPrefix = "model.diffusion_model.";
inline constexpr const char* kLdmVaePrefix = "first_stage_model.";
inline constexpr const char* kLdmTextPrefix = "cond_stage_model.transformer.";

// The LDM name of a diffusers UNet parameter (prefix included), or nullopt when the name is not
// part of the SD 1.x / SDXL UNet layout (SDXL's add_embedding is label_emb.0).
// `down_cross_attention[i]`: down block i (and the mirrored up block) has attentions, which moves
// the upsampler of that up block one slot on.
std::optional<std::string> unet_ldm_name(const std::string& diffusers_name,
                                         std::int64_t layers_per_block,
                                         const std::vector<bool>& down_cross_attention);
// The same for the VAE; `blocks` is the number of encoder/decoder blocks (4 in SD 1.x).
std::optional<std::string> vae_ldm_name(const std::string& diffusers_name, std::int64_t blocks);
// CLIP text encoder: the Hugging Face name behind cond_stage_model.transformer.
std::string text_encoder_ldm_name(const std::string& hf_name);

}  // namespace crucible::sd
