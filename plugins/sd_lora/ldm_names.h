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
// SDXL single files: the first text encoder (Hugging Face names) and the second (OpenCLIP's).
inline constexpr const char* kSdxlTextPrefix = "conditioner.embedders.0.transformer.";
inline constexpr const char* kSdxlText2Prefix = "conditioner.embedders.1.model.";

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

// The Hugging Face CLIPTextModelWithProjection name of an OpenCLIP text-tower tensor (its name
// after kSdxlText2Prefix). `stacked_qkv`: in_proj_weight / in_proj_bias hold q, k and v stacked;
// `hf` is then the q_proj name (k_proj and v_proj follow the same pattern). `transposed`: the
// OpenCLIP text_projection is [hidden, projection], the transpose of the Linear weight.
// nullopt for tensors with no twin (logit_scale, attn_mask).
struct OpenClipName {
    std::string hf;
    bool stacked_qkv = false;
    bool transposed = false;
};
std::optional<OpenClipName> open_clip_hf_name(const std::string& open_clip_name);
// The reverse: the OpenCLIP name of a Hugging Face text-tower tensor (q_proj, k_proj and v_proj
// all name the layer's in_proj_weight / in_proj_bias, stacked in that order).
std::optional<std::string> open_clip_name(const std::string& hf_name);

}  // namespace crucible::sd
