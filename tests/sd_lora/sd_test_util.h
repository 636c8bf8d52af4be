#pragma once
// Helpers for the SD LoRA tests: temporary folders, a tiny generated CLIP tokenizer (every byte
// symbol, their word-end forms and a few merges), and tiny random diffusers model folders.
#include <filesystem>
#include <string>

namespace crucible::sd::testing {

std::filesystem::path fresh_dir(const std::string& name);

// vocab.json + merges.txt in `folder`; merges build "red</w>", "cat</w>", "square</w>".
void write_tiny_tokenizer(const std::filesystem::path& folder);
std::string tiny_vocab_json();
std::string tiny_merges_txt();

// A diffusers folder (unet, vae, text_encoder, tokenizer) of the tiny configs with random weights
// drawn from `seed`.
void write_tiny_model_folder(const std::filesystem::path& folder, unsigned seed);

// The same for SDXL: a UNet with SDXL's structure at tiny sizes (a plain first block, linear
// projections, per-block heads and depths, the text_time add embedding), both text encoders
// (the second with its projection) and both tokenizers (the second padding with "!").
void write_tiny_sdxl_model_folder(const std::filesystem::path& folder, unsigned seed);

}  // namespace crucible::sd::testing
