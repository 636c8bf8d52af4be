#pragma once
// Loading SD 1.x and SDXL base models: Hugging Face diffusers folders (unet/, vae/,
// text_encoder/, tokenizer/ and for SDXL text_encoder_2/, tokenizer_2/, with config.json and
// .safetensors weights) and single-file LDM `.safetensors`
// checkpoints (model.diffusion_model.*, first_stage_model.*, cond_stage_model.transformer.*),
// mapped to the diffusers layout by structure (ldm_names.h). Every tensor is checked: a missing,
// mis-shaped or left-over tensor is named in the InputError. Writers for both layouts exist for
// tests and for exporting merged models.
#include <torch/torch.h>

#include <filesystem>
#include <optional>
#include <string>

#include "plugins/sd_lora/clip_text.h"
#include "plugins/sd_lora/clip_tokenizer.h"
#include "plugins/sd_lora/unet.h"
#include "plugins/sd_lora/vae.h"

namespace crucible::sd {

struct SdModelConfigs {
    UNetConfig unet = UNetConfig::sd15();
    VaeConfig vae = VaeConfig::sd15();
    ClipTextConfig text = ClipTextConfig::sd15();
    std::optional<ClipTextConfig> text_2;  // SDXL's second encoder

    // SDXL base 1.0: its UNet, the SD VAE with SDXL's latent scale, CLIP ViT-L and OpenCLIP bigG.
    static SdModelConfigs sdxl();
};

struct SdModels {
    UNet unet{nullptr};
    AutoencoderKL vae{nullptr};
    ClipTextModel text_encoder{nullptr};
    ClipTextModel text_encoder_2{nullptr};   // SDXL's second encoder (with its projection)
    std::optional<ClipTokenizer> tokenizer;  // from a tokenizer/ folder when there is one
    std::optional<ClipTokenizer> tokenizer_2;
};

// Which parts to load (the VAE encoder is not needed once latents are cached, ...).
struct LoadParts {
    bool unet = true, vae = true, text_encoder = true;  // text_encoder: both of SDXL's
};

// A folder with model_index.json or unet/config.json is a diffusers folder; a file ending in
// .safetensors is a single-file checkpoint (its configs are SD 1.5's, or SDXL base's for a file
// with SDXL's label_emb, unless given). An SDXL single file holds the first text encoder under
// conditioner.embedders.0.transformer. and the second in OpenCLIP's layout under
// conditioner.embedders.1.model. Anything else
// is an InputError naming the path.
SdModels load_sd_models(const std::filesystem::path& path, const LoadParts& parts = {},
                        const std::optional<SdModelConfigs>& single_file_configs = {});

SdModels load_diffusers_folder(const std::filesystem::path& folder, const LoadParts& parts = {});
SdModels load_single_file(const std::filesystem::path& file, const SdModelConfigs& configs,
                          const LoadParts& parts = {});

// A CLIP tokenizer folder (vocab.json, merges.txt; the pad token its tokenizer_config.json or
// special_tokens_map.json names); nullopt when the folder has no vocab.json / merges.txt.
std::optional<ClipTokenizer> load_tokenizer_folder(const std::filesystem::path& folder);

// The configs of a base model without its weights (a diffusers folder's config.json files; a
// single file's are SD 1.5's or, with SDXL's label_emb, SDXL base's): for memory predictions.
SdModelConfigs read_sd_configs(const std::filesystem::path& path);

// Writers (base weights only, float32 unless the tensors are already another dtype).
void save_diffusers_folder(const std::filesystem::path& folder, SdModels& models);
void save_single_file(const std::filesystem::path& file, SdModels& models);

// LDM names of every parameter of the models, diffusers name -> LDM name (tests, tooling).
std::map<std::string, std::string> ldm_name_map(const UNetConfig& unet, const VaeConfig& vae);

}  // namespace crucible::sd
