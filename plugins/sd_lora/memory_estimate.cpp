#include "plugins/sd_lora/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "plugins/sd_lora/lora.h"
#include "plugins/sd_lora/nn.h"

namespace crucible::sd {
namespace {

// Elements kept for backward per element of a block's feature map (batch x pixels x channels),
// fitted to LibTorch's live tensor bytes on the CPU (tests/sd_lora/memory_test.cpp, least squares
// over the tiny SD 1.x and SDXL UNets at 256 and 512 px): a ResNet (its norms' and activations'
// inputs, both convolutions' inputs, on the way up with the skip concatenated: 12.2 fitted) and a
// transformer block (three norms, q, k, v and attention's output, the GEGLU's 8x and 4x wide
// feed-forward: 25.8 fitted), rounded up.
constexpr double kResnetKeeps = 12.5;
constexpr double kTransformerKeeps = 26.0;
// With a half-precision base each adapter casts its input to fp32 and keeps that copy: per
// transformer block q, k, v (one each), attention's two outputs, attn2's query, the feed-forward's
// input and its 4x-wide hidden state (11), and the spatial transformer's proj_in / proj_out.
constexpr double kHalfBaseAdapterInputs = 12.0;
// A CLIP layer over its tokens x width: two norms, q, k, v, attention output, the 4x MLP twice.
constexpr double kClipLayerKeeps = 16.0;

std::int64_t parameter_count(torch::nn::Module& m) {
    std::int64_t n = 0;
    for (const auto& p : m.parameters())
        n += p.numel();
    return n;
}

std::int64_t adapter_values(const std::vector<LoraTarget>& targets, std::int64_t rank) {
    std::int64_t n = 0;
    for (const auto& t : targets)
        n += rank * (t.in + t.out);
    return n;
}

// One block of the UNet as backward sees it: its feature map and what it keeps per element.
struct Block {
    double elements = 0;  // batch x pixels x channels
    double keeps = 0;
    bool transformer = false;  // a transformer block (its adapters' inputs)
};

}  // namespace

engine::MemoryEstimate estimate_sd_memory(const SdMemoryPlan& plan) {
    const UNetConfig& u = plan.unet;
    const double base_bytes = static_cast<double>(c10::elementSize(plan.base_dtype));
    const double act_bytes = plan.amp || plan.base_dtype != torch::kFloat32 ? 2.0 : 4.0;

    // Layouts on the meta device: parameter counts and the adapters' shapes, nothing allocated.
    ParamInitGuard meta(ParamInit::Meta);
    UNet unet(u);
    ClipTextModel text(plan.text);
    std::optional<ClipTextModel> text_2;
    if (plan.text_2) text_2.emplace(*plan.text_2);
    AutoencoderKL vae(plan.vae);
    std::int64_t text_params = parameter_count(*text);
    if (text_2) text_params += parameter_count(**text_2);
    std::int64_t lora_values = adapter_values(unet_lora_targets(*unet), plan.rank);
    if (plan.train_text_encoder) {
        lora_values += adapter_values(text_encoder_lora_targets(*text), plan.rank);
        if (text_2) lora_values += adapter_values(text_encoder_lora_targets(**text_2), plan.rank);
    }

    // The UNet's blocks, level by level (latents are 1/8 of the pixels, halved per level).
    const auto n = u.block_out_channels.size();
    std::size_t first_adapted = n;  // nothing before the first spatial transformer keeps
    for (std::size_t i = 0; i < n; ++i)
        if (u.down_cross_attention[i]) {
            first_adapted = i;
            break;
        }
    std::vector<Block> blocks;
    const double batch = static_cast<double>(plan.batch);
    for (std::size_t i = 0; i < n; ++i) {
        const double side = std::pow(2.0, static_cast<double>(i)) * 8.0;
        const double pixels = std::max(1.0, std::floor(static_cast<double>(plan.height) / side)) *
                              std::max(1.0, std::floor(static_cast<double>(plan.width) / side));
        const double fmap = batch * pixels * static_cast<double>(u.block_out_channels[i]);
        const auto depth = static_cast<double>(u.transformer_layers[i]);
        const auto per_level = static_cast<double>(u.layers_per_block);
        // Down blocks (kept only from the first adapted level on), then the mirrored up blocks.
        for (int up = 0; up < 2; ++up) {
            const double units = per_level + up;
            if (up == 1 || i >= first_adapted)
                blocks.insert(blocks.end(), static_cast<std::size_t>(units),
                              Block{fmap, kResnetKeeps});
            if (u.down_cross_attention[i])
                blocks.insert(blocks.end(), static_cast<std::size_t>(units * depth),
                              Block{fmap, kTransformerKeeps, true});
        }
        if (i + 1 == n) {  // the mid block: two ResNets around a spatial transformer
            blocks.insert(blocks.end(), 2, Block{fmap, kResnetKeeps});
            blocks.insert(blocks.end(), static_cast<std::size_t>(depth),
                          Block{fmap, kTransformerKeeps, true});
        }
    }
    double kept = 0, largest = 0, widest = 0, adapter_inputs = 0;
    const bool half_base = plan.base_dtype != torch::kFloat32;
    for (const auto& b : blocks) {
        kept += plan.gradient_checkpointing ? b.elements : b.elements * b.keeps;
        largest = std::max(largest, b.elements * b.keeps);
        widest = std::max(widest, b.elements);
        if (half_base && !plan.gradient_checkpointing && b.transformer)
            adapter_inputs += b.elements * kHalfBaseAdapterInputs;
    }
    // With checkpointing the largest block is recomputed in backward, its gradients beside it.
    if (plan.gradient_checkpointing) kept += 2 * largest;
    double text_kept = 0;
    if (plan.train_text_encoder) {
        auto layers = [&](const ClipTextConfig& c) {
            return static_cast<double>(c.num_hidden_layers) * batch *
                   static_cast<double>(c.max_position_embeddings * c.hidden_size) * kClipLayerKeeps;
        };
        text_kept = layers(plan.text) + (plan.text_2 ? layers(*plan.text_2) : 0.0);
    }

    engine::MemoryEstimate m;
    const auto bytes = [](double b) { return static_cast<std::int64_t>(b); };
    m.parts = {
        {"weights: UNet", bytes(static_cast<double>(parameter_count(*unet)) * base_bytes)},
        {"weights: text encoders", bytes(static_cast<double>(text_params) * base_bytes)},
        {"weights: VAE (fp32)", parameter_count(*vae) * 4},
        {"LoRA adapters, gradients, AdamW", lora_values * 16},
        {"activations kept for backward (UNet)", bytes(kept * act_bytes)},
        // The feed-forward's 8x-wide gradient at the widest feature map, and the gradient of
        // the feature map itself.
        {"backward: gradients in flight", bytes(widest * 9.0 * act_bytes)},
    };
    if (half_base)
        m.parts.push_back({"adapters' fp32 copies of their inputs", bytes(adapter_inputs * 4.0)});
    if (plan.train_text_encoder)
        m.parts.push_back(
            {"activations kept for backward (text encoders)", bytes(text_kept * act_bytes)});
    m.notes.push_back("batch " + std::to_string(plan.batch) + " at " + std::to_string(plan.width) +
                      "x" + std::to_string(plan.height) +
                      " px (the largest bucket), latents and text states cached");
    return m;
}

}  // namespace crucible::sd
