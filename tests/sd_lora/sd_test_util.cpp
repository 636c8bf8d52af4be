#include "tests/sd_lora/sd_test_util.h"

#include <torch/torch.h>

#include <fstream>

#include "core/base/allocator.h"
#include "core/base/json.h"
#include "core/data/text/byte_level.h"
#include "plugins/sd_lora/checkpoint_io.h"
#include "plugins/sd_lora/clip_tokenizer.h"
#include "tests/support/results_csv.h"
#include "tests/support/temp_dir.h"

namespace crucible::sd::testing {
namespace {

// glibc serves every block above a (dynamic, initially 128 KB) threshold with a fresh mmap, so
// each new activation tensor page-faults all its pages; on virtual machines that dominated the
// tiny UNet's time (13 s instead of 2 s for one reference forward). The test executables keep
// freed memory as training does (core/base/allocator.h), from the start.
[[maybe_unused]] const bool kMallocTuned = keep_freed_memory_for_reuse();

const char* kMerges[] = {"r e",   "re d</w>", "c a",         "ca t</w>", "s q",    "sq u",
                         "squ a", "squa r",   "squar e</w>", "i t</w>",  "' s</w>"};
}  // namespace

std::filesystem::path fresh_dir(const std::string& name) {
    return test_support::scratch_dir(std::string("sd_") + name);
}

std::string tiny_vocab_json() {
    Json v = Json::object();
    int id = 0;
    for (const auto& s : data::text::byte_symbols())
        v[s] = id++;
    for (const auto& s : data::text::byte_symbols())
        v[s + "</w>"] = id++;
    for (const char* m : kMerges) {
        std::string merged = m;
        merged.erase(merged.find(' '), 1);
        if (!v.contains(merged)) v[merged] = id++;
    }
    v["<|startoftext|>"] = id++;
    v["<|endoftext|>"] = id++;
    return v.dump();
}

std::string tiny_merges_txt() {
    std::string out = "#version: 0.2\n";
    for (const char* m : kMerges)
        out += std::string(m) + "\n";
    return out;
}

void write_tiny_tokenizer(const std::filesystem::path& folder) {
    std::filesystem::create_directories(folder);
    std::ofstream(folder / "vocab.json", std::ios::binary) << tiny_vocab_json();
    std::ofstream(folder / "merges.txt", std::ios::binary) << tiny_merges_txt();
}

void write_tiny_model_folder(const std::filesystem::path& folder, unsigned seed) {
    torch::manual_seed(seed);
    SdModels m;
    m.unet = UNet(UNetConfig::tiny());
    m.vae = AutoencoderKL(VaeConfig::tiny());
    ClipTextConfig tc = ClipTextConfig::tiny();
    tc.vocab_size = 600;  // the generated vocabulary has 526 entries
    m.text_encoder = ClipTextModel(tc);
    save_diffusers_folder(folder, m);
    write_tiny_tokenizer(folder / "tokenizer");
}

void write_tiny_sdxl_model_folder(const std::filesystem::path& folder, unsigned seed) {
    torch::manual_seed(seed);
    ClipTextConfig first = ClipTextConfig::tiny();
    first.vocab_size = 600;  // the generated vocabulary has 526 entries
    ClipTextConfig second = first;
    second.quick_gelu = false;
    second.projection_dim = 32;
    const UNetConfig u = UNetConfig::tiny_sdxl();  // cross-attention 32 + 32, pooled 32
    SdModels m;
    m.unet = UNet(u);
    m.vae = AutoencoderKL(VaeConfig::tiny());
    m.text_encoder = ClipTextModel(first);
    m.text_encoder_2 = ClipTextModel(second);
    save_diffusers_folder(folder, m);
    write_tiny_tokenizer(folder / "tokenizer");
    write_tiny_tokenizer(folder / "tokenizer_2");
    std::ofstream(folder / "tokenizer_2" / "special_tokens_map.json") << R"({"pad_token": "!"})";
}

}  // namespace crucible::sd::testing
