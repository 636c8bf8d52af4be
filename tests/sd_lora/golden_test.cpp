// The SD UNet and CLIP text encoder, loaded from a diffusers folder by the real loader, against
// golden references made by the current diffusers and transformers (tests/fixtures/golden,
// written by tests/fixtures/make_golden.py; versions in its README). The shared fixtures of
// model_test.cpp come from diffusers 0.21 on torch 1.13; these confirm the newer releases,
// including transformers 5's text-encoder file without the text_model level. fp32 on the CPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <string>

#include "core/engine/safetensors_torch.h"
#include "plugins/sd_lora/checkpoint_io.h"
#include "tests/fixtures/golden_compare.h"

namespace crucible::sd {
namespace {

using golden::kTolerance;
using golden::relative_diff;

TEST(GoldenSd, DiffusersUNetGivesTheReferenceOutputs) {
    SdModels m = load_sd_models(golden::path("sd_tiny"),
                                LoadParts{.unet = true, .vae = false, .text_encoder = false});
    ASSERT_TRUE(m.unet);
    EXPECT_EQ(m.unet->config.block_out_channels, (std::vector<std::int64_t>{8, 16}));
    EXPECT_EQ(m.unet->config.down_cross_attention, (std::vector<bool>{true, false}));
    EXPECT_EQ(m.unet->config.attention_heads, (std::vector<std::int64_t>{2, 2}));
    EXPECT_EQ(m.unet->config.norm_num_groups, 4);
    m.unet->eval();
    const auto c = engine::load_safetensors(golden::path("sd_tiny_unet_case.safetensors"));
    torch::NoGradGuard no_grad;
    const torch::Tensor out =
        m.unet->forward(c.at("sample"), c.at("timesteps"), c.at("encoder_hidden_states"));
    EXPECT_LE(relative_diff(out, c.at("expected"), "unet [2, 4, 16, 16]"), kTolerance);
    // Odd spatial size (the upsampler takes the skip's size), a scalar timestep, 5 text tokens.
    const torch::Tensor odd = m.unet->forward(c.at("odd_sample"), c.at("odd_timestep"),
                                              c.at("odd_encoder_hidden_states"));
    EXPECT_LE(relative_diff(odd, c.at("odd_expected"), "unet [1, 4, 9, 7]"), kTolerance);
}

TEST(GoldenSd, Transformers5ClipTextEncoderGivesTheReferenceHiddenStates) {
    SdModels m = load_sd_models(golden::path("sd_tiny"),
                                LoadParts{.unet = false, .vae = false, .text_encoder = true});
    ASSERT_TRUE(m.text_encoder);
    EXPECT_EQ(m.text_encoder->config.num_hidden_layers, 3);
    EXPECT_TRUE(m.text_encoder->config.quick_gelu);
    m.text_encoder->eval();
    const auto c = engine::load_safetensors(golden::path("sd_tiny_clip_case.safetensors"));
    torch::NoGradGuard no_grad;
    const torch::Tensor ids = c.at("input_ids");
    EXPECT_LE(
        relative_diff(m.text_encoder->forward(ids), c.at("last_hidden_state"), "clip last layer"),
        kTolerance);
    EXPECT_LE(relative_diff(m.text_encoder->forward(ids, 2), c.at("clip_skip2_hidden_state"),
                            "clip skip 2"),
              kTolerance);
}

}  // namespace
}  // namespace crucible::sd
