// SDXL: the UNet (per-block heads and transformer depths, linear projections, the text_time add
// embedding) and both text encoders loaded from a diffusers folder by the real loader, against
// golden references made by diffusers and transformers (tests/fixtures/golden/sdxl_*, written by
// make_golden.py); the real SDXL base layout name for name; the kohya LoRA keys against diffusers'
// reader of kohya files; configs that are not SDXL's rejected naming the field. fp32 on the CPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <opencv2/core.hpp>

#include <fstream>
#include <map>
#include <set>
#include <string>

#include "core/base/error.h"
#include "core/base/json.h"
#include "core/data/caption_buckets.h"
#include "core/data/caption_dataset.h"
#include "core/data/image_io.h"
#include "core/engine/safetensors_torch.h"
#include "plugins/sd_lora/checkpoint_io.h"
#include "plugins/sd_lora/ldm_names.h"
#include "plugins/sd_lora/lora.h"
#include "plugins/sd_lora/nn.h"
#include "plugins/sd_lora/sd_batches.h"
#include "plugins/sd_lora/state_dict.h"
#include "plugins/sd_lora/text_conditioning.h"
#include "tests/fixtures/golden_compare.h"
#include "tests/sd_lora/sd_test_util.h"
#include "tests/support/temp_dir.h"

namespace crucible::sd {
namespace {
namespace fs = std::filesystem;

using golden::kTolerance;
using golden::relative_diff;

std::map<std::string, std::vector<std::int64_t>> layout_of(const torch::nn::Module& m) {
    std::map<std::string, std::vector<std::int64_t>> out;
    for (const auto& [name, shape] : parameter_layout(m))
        out[name] = shape;
    return out;
}

std::map<std::string, std::vector<std::int64_t>> reference_layout(const std::string& part) {
    std::map<std::string, std::vector<std::int64_t>> out;
    const Json layout = read_json_file(golden::path("sdxl_layout.json"));
    for (const auto& [name, shape] : layout.at(part).items())
        out[name] = shape.get<std::vector<std::int64_t>>();
    return out;
}

// An SDXL single file (sd_xl_base_1.0.safetensors's layout: LDM UNet names, the second text
// encoder in OpenCLIP's layout), built from the tiny SDXL folder by the map make_golden.py checked
// with diffusers' own single-file converters, loads and gives the golden outputs.
std::map<std::string, torch::Tensor> tiny_sdxl_single_file() {
    const fs::path folder = golden::path("sdxl_tiny");
    const std::map<std::string, std::map<std::string, torch::Tensor>> parts = {
        {"unet", engine::load_safetensors(folder / "unet" / "diffusion_pytorch_model.safetensors")},
        {"text_encoder", engine::load_safetensors(folder / "text_encoder" / "model.safetensors")},
        {"text_encoder_2",
         engine::load_safetensors(folder / "text_encoder_2" / "model.safetensors")}};
    const Json map = read_json_file(golden::path("sdxl_tiny_single_file_map.json"));
    std::map<std::string, torch::Tensor> single;
    for (const auto& [key, e] : map.items()) {
        std::vector<torch::Tensor> from;
        for (const auto& name : e["from"])
            from.push_back(parts.at(e["part"].get<std::string>()).at(name.get<std::string>()));
        const std::string op = e["op"].get<std::string>();
        single[key] = op == "stack" ? torch::cat(from)
                      : op == "t"   ? from[0].t().contiguous()
                                    : from[0];
    }
    return single;
}

SdModelConfigs tiny_sdxl_configs() {
    const fs::path folder = golden::path("sdxl_tiny");
    SdModelConfigs c;
    c.unet = UNetConfig::from_diffusers_json(read_json_file(folder / "unet" / "config.json"), "u");
    c.text =
        ClipTextConfig::from_hf_json(read_json_file(folder / "text_encoder" / "config.json"), "t1");
    c.text_2 = ClipTextConfig::from_hf_json(
        read_json_file(folder / "text_encoder_2" / "config.json"), "t2");
    return c;
}

TEST(Sdxl, BaseUNetAndBigGLayoutsEqualDiffusersNameForName) {
    ParamInitGuard meta(ParamInit::Meta);
    UNet unet(UNetConfig::sdxl());
    const auto unet_want = reference_layout("unet");
    ASSERT_GT(unet_want.size(), 1500u);
    EXPECT_EQ(layout_of(*unet), unet_want);
    std::int64_t params = 0;
    for (const auto& p : unet->parameters())
        params += p.numel();
    EXPECT_EQ(params, 2567463684);  // diffusers' count for the SDXL base UNet

    ClipTextModel te2(ClipTextConfig::sdxl_bigg());
    EXPECT_EQ(layout_of(*te2), reference_layout("text_encoder_2"));
}

TEST(Sdxl, DiffusersUNetGivesTheReferenceOutputs) {
    SdModels m = load_sd_models(golden::path("sdxl_tiny"),
                                LoadParts{.unet = true, .vae = false, .text_encoder = false});
    ASSERT_TRUE(m.unet);
    const UNetConfig& c = m.unet->config;
    EXPECT_EQ(c.down_cross_attention, (std::vector<bool>{false, true, true}));
    EXPECT_EQ(c.attention_heads, (std::vector<std::int64_t>{1, 2, 2}));
    EXPECT_EQ(c.transformer_layers, (std::vector<std::int64_t>{1, 1, 2}));
    EXPECT_TRUE(c.use_linear_projection);
    EXPECT_EQ(c.addition_time_embed_dim, 4);
    EXPECT_EQ(c.pooled_text_dim(), 12);
    m.unet->eval();
    const auto k = engine::load_safetensors(golden::path("sdxl_tiny_unet_case.safetensors"));
    torch::NoGradGuard no_grad;
    const torch::Tensor out =
        m.unet->forward(k.at("sample"), k.at("timesteps"), k.at("encoder_hidden_states"),
                        k.at("text_embeds"), k.at("time_ids"));
    EXPECT_LE(relative_diff(out, k.at("expected"), "sdxl unet [2, 4, 16, 12]"), kTolerance);
    // The size and crop conditioning is not optional for an SDXL UNet, nor accepted by SD 1.x's.
    EXPECT_THROW(m.unet->forward(k.at("sample"), k.at("timesteps"), k.at("encoder_hidden_states")),
                 Error);
    EXPECT_THROW(m.unet->forward(k.at("sample"), k.at("timesteps"), k.at("encoder_hidden_states"),
                                 k.at("text_embeds"), k.at("time_ids").narrow(1, 0, 5)),
                 Error);
}

TEST(Sdxl, BothTextEncodersGiveThePipelinesConditioning) {
    SdModels m = load_sd_models(golden::path("sdxl_tiny"),
                                LoadParts{.unet = false, .vae = false, .text_encoder = true});
    ASSERT_TRUE(m.text_encoder);
    ASSERT_TRUE(m.text_encoder_2);
    EXPECT_EQ(m.text_encoder->config.projection_dim, 0);
    EXPECT_EQ(m.text_encoder_2->config.projection_dim, 12);
    EXPECT_FALSE(m.text_encoder_2->config.quick_gelu);
    m.text_encoder->eval();
    m.text_encoder_2->eval();
    const auto k = engine::load_safetensors(golden::path("sdxl_tiny_clip_case.safetensors"));
    torch::NoGradGuard no_grad;
    const auto one = m.text_encoder->encode_sdxl(k.at("input_ids"), /*with_pooled=*/false);
    EXPECT_FALSE(one.pooled.defined());
    EXPECT_LE(relative_diff(one.penultimate, k.at("penultimate"), "sdxl te1 hidden_states[-2]"),
              kTolerance);
    // The second tokenizer pads with id 0, so the EOS is found by its id, not as the largest.
    const auto two = m.text_encoder_2->encode_sdxl(k.at("input_ids_2"), /*with_pooled=*/true);
    EXPECT_LE(relative_diff(two.penultimate, k.at("penultimate_2"), "sdxl te2 hidden_states[-2]"),
              kTolerance);
    EXPECT_LE(relative_diff(two.pooled, k.at("text_embeds_2"), "sdxl te2 text_embeds"), kTolerance);
}

TEST(Sdxl, KohyaKeysAreTheOnesDiffusersKohyaReaderMaps) {
    SdModels m = load_sd_models(golden::path("sdxl_tiny"), LoadParts{.vae = false});
    const Json want = read_json_file(golden::path("sdxl_tiny_kohya_unet_keys.json"));
    const auto targets = unet_lora_targets(*m.unet);
    ASSERT_EQ(targets.size(), want.size());
    for (const auto& t : targets) {
        ASSERT_TRUE(want.contains(t.kohya)) << t.kohya << " (" << t.module << ")";
        const Json& w = want[t.kohya];
        EXPECT_EQ(w["module"].get<std::string>(), t.module) << t.kohya;
        EXPECT_EQ(w["in"].get<std::int64_t>(), t.in) << t.kohya;
        EXPECT_EQ(w["out"].get<std::int64_t>(), t.out) << t.kohya;
        EXPECT_FALSE(t.conv) << t.kohya << ": SDXL's projections are Linear";
    }
    // The text encoders: lora_te1_ / lora_te2_ plus the Hugging Face module path.
    const auto te1 = text_encoder_lora_targets(*m.text_encoder, "lora_te1");
    const auto te2 = text_encoder_lora_targets(*m.text_encoder_2, "lora_te2");
    ASSERT_EQ(te1.size(), 3u * 6u);
    ASSERT_EQ(te2.size(), 3u * 6u);
    EXPECT_EQ(te1.front().kohya, "lora_te1_text_model_encoder_layers_0_self_attn_k_proj");
    EXPECT_EQ(te2.back().kohya, "lora_te2_text_model_encoder_layers_2_mlp_fc2");

    // One network over all three trains at two learning rates: UNet and both text encoders.
    std::vector<LoraTarget> all = targets;
    all.insert(all.end(), te1.begin(), te1.end());
    all.insert(all.end(), te2.begin(), te2.end());
    LoraNetwork net(all, LoraOptions{4, 4, 0, false});
    const auto groups = lora_parameter_groups(*net, 1.0, 0.5);
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(groups[1].name, "text_encoder");
    EXPECT_EQ(groups[1].params.size(), 2u * (te1.size() + te2.size()));
}

TEST(Sdxl, DiffusersFolderRoundTripKeepsBothEncodersAndTheConfig) {
    test_support::TempDir dir("sdxl_roundtrip");
    SdModels m = load_sd_models(golden::path("sdxl_tiny"), LoadParts{.vae = false});
    save_diffusers_folder(dir.path() / "copy", m);
    EXPECT_EQ(read_json_file(dir.path() / "copy" / "model_index.json")["_class_name"],
              "StableDiffusionXLPipeline");
    SdModels back = load_sd_models(dir.path() / "copy", LoadParts{.vae = false});
    ASSERT_TRUE(back.text_encoder_2);
    EXPECT_EQ(back.unet->config.to_diffusers_json(), m.unet->config.to_diffusers_json());
    EXPECT_EQ(back.text_encoder_2->config.to_hf_json(), m.text_encoder_2->config.to_hf_json());
    const auto k = engine::load_safetensors(golden::path("sdxl_tiny_unet_case.safetensors"));
    torch::NoGradGuard no_grad;
    back.unet->eval();
    const torch::Tensor out =
        back.unet->forward(k.at("sample"), k.at("timesteps"), k.at("encoder_hidden_states"),
                           k.at("text_embeds"), k.at("time_ids"));
    EXPECT_LE(relative_diff(out, k.at("expected"), "sdxl unet after a round trip"), kTolerance);
    // The single-file writer gives exactly the file diffusers' converters were checked on.
    save_single_file(dir.path() / "one.safetensors", m);
    const auto written = engine::load_safetensors(dir.path() / "one.safetensors");
    const auto want = tiny_sdxl_single_file();
    EXPECT_EQ(written.size(), want.size());
    for (const auto& [name, t] : want) {
        const auto it = written.find(name);
        ASSERT_NE(it, written.end()) << name;
        EXPECT_TRUE(torch::equal(it->second, t)) << name;
    }
}

// UNet configs that are not SD 1.x or SDXL: every case names its field.
TEST(Sdxl, ConfigsOutsideSdxlAreRejectedNamingTheField) {
    const Json base = read_json_file(golden::path("sdxl_tiny/unet/config.json"));
    ASSERT_NO_THROW(UNetConfig::from_diffusers_json(base, "config.json"));
    const std::vector<std::pair<std::string, Json>> cases = {
        {"attention_head_dim", Json::array({1, 2})},       // one short
        {"attention_head_dim", Json::array({1, "2", 2})},  // wrong type
        {"transformer_layers_per_block", Json::array({1, 1, 0})},
        {"transformer_layers_per_block", Json::object()},
        {"num_attention_heads", 100000},
        {"addition_embed_type", "image"},
        {"addition_time_embed_dim", 3},                 // odd: no sin/cos halves
        {"projection_class_embeddings_input_dim", 24},  // no room for the pooled text
        {"class_embed_type", "timestep"},
        {"reverse_transformer_layers_per_block", Json::array({Json::array({1})})},
        {"use_linear_projection", "yes"},
        {"mid_block_type", "UNetMidBlock2DSimpleCrossAttn"},
        {"dual_cross_attention", true},
    };
    for (const auto& [key, value] : cases) {
        Json bad = base;
        bad[key] = value;
        try {
            UNetConfig::from_diffusers_json(bad, "unet/config.json");
            ADD_FAILURE() << key << " = " << value.dump() << " was accepted";
        } catch (const InputError& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find(key.substr(0, 12)), std::string::npos) << what;
            EXPECT_NE(what.find("unet/config.json"), std::string::npos) << what;
        }
    }
    // text_time without its sizes.
    Json bad = base;
    bad.erase("addition_time_embed_dim");
    EXPECT_THROW(UNetConfig::from_diffusers_json(bad, "x"), InputError);
}

TEST(Sdxl, SingleFileCheckpointGivesTheReferenceOutputs) {
    test_support::TempDir dir("sdxl_single");
    const fs::path file = dir.path() / "sdxl.safetensors";
    engine::save_safetensors(file, tiny_sdxl_single_file());
    SdModels m = load_sd_models(file, LoadParts{.vae = false}, tiny_sdxl_configs());
    ASSERT_TRUE(m.unet && m.text_encoder && m.text_encoder_2);
    m.unet->eval();
    const auto k = engine::load_safetensors(golden::path("sdxl_tiny_unet_case.safetensors"));
    const auto t = engine::load_safetensors(golden::path("sdxl_tiny_clip_case.safetensors"));
    torch::NoGradGuard no_grad;
    EXPECT_LE(relative_diff(
                  m.unet->forward(k.at("sample"), k.at("timesteps"), k.at("encoder_hidden_states"),
                                  k.at("text_embeds"), k.at("time_ids")),
                  k.at("expected"), "single-file sdxl unet"),
              kTolerance);
    EXPECT_LE(relative_diff(m.text_encoder->encode_sdxl(t.at("input_ids"), false).penultimate,
                            t.at("penultimate"), "single-file sdxl te1"),
              kTolerance);
    EXPECT_LE(relative_diff(m.text_encoder_2->encode_sdxl(t.at("input_ids_2"), true).pooled,
                            t.at("text_embeds_2"), "single-file sdxl te2 pooled"),
              kTolerance);

    // Without configs an SDXL file is read as SDXL base 1.0 (not SD 1.5): the tiny one does not
    // match it, and the error names the tensors, before anything is drawn at random.
    try {
        load_sd_models(file, LoadParts{.vae = false});
        ADD_FAILURE() << "a tiny SDXL file loaded as SDXL base";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("input_blocks.0.0.weight: file [4, 4, 3, 3] vs "
                                             "model [320, 4, 3, 3]"),
                  std::string::npos)
            << e.what();
    }
}

TEST(Sdxl, BrokenOpenClipTensorsAreNamed) {
    test_support::TempDir dir("sdxl_single_bad");
    const std::string in_proj =
        std::string(kSdxlText2Prefix) + "transformer.resblocks.1.attn.in_proj_weight";
    const std::vector<std::pair<std::string, torch::Tensor>> cases = {
        {in_proj, torch::zeros({7, 12})},  // not three stacked projections
        {std::string(kSdxlText2Prefix) + "transformer.resblocks.0.attn.bogus", torch::zeros({2})},
        {std::string(kSdxlText2Prefix) + "text_projection", torch::zeros({12})},  // not a matrix
    };
    for (const auto& [name, tensor] : cases) {
        auto single = tiny_sdxl_single_file();
        single[name] = tensor;
        const fs::path file = dir.path() / "bad.safetensors";
        engine::save_safetensors(file, single);
        try {
            load_sd_models(file, LoadParts{.unet = false, .vae = false}, tiny_sdxl_configs());
            ADD_FAILURE() << name << " was accepted";
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
        }
    }
}

// The time ids of a cached batch are the image's as SDXL saw it: a 48x24 image scaled to cover
// the 32x32 bucket is 64x32, center-cropped at left 16; flipped, the crop stays centered. One
// off centre mirrors its left edge when flipped.
TEST(Sdxl, BatchTimeIdsAreOriginalSizeCropAndBucket) {
    test_support::TempDir dir("sdxl_time_ids");
    fs::create_directories(dir.path() / "data");
    data::write_image(dir.path() / "data" / "wide.png", cv::Mat(24, 48, CV_8UC3, cv::Scalar(9)));
    std::ofstream(dir.path() / "data" / "wide.txt") << "a wide image";
    SdDataOptions o;
    o.buckets.resolution = 32;
    o.buckets.min_size = 16;
    o.buckets.max_size = 64;
    o.buckets.step = 16;
    o.buckets.enabled = false;
    o.flip = true;
    SdTrainingData data(data::load_caption_folder(dir.path() / "data", {}), o, 1);
    torch::manual_seed(0);
    AutoencoderKL vae(VaeConfig::tiny());
    data.cache_latents(*vae, torch::kCPU);
    for (int index = 0; index < 4; ++index) {  // flipped and not, as the batches draw them
        const SdBatch b = data.make_batch({0}, 0, index);
        ASSERT_EQ(b.time_ids.sizes(), (torch::IntArrayRef{1, kSdxlTimeIds}));
        EXPECT_TRUE(torch::equal(b.time_ids, torch::tensor({{24.f, 48.f, 0.f, 16.f, 32.f, 32.f}})))
            << b.time_ids;
    }

    // A 50x24 image's crop is one pixel off centre: flipped, its left edge is mirrored
    // (resized width - left - bucket width), as the flipped latent was cut.
    fs::create_directories(dir.path() / "odd");
    data::write_image(dir.path() / "odd" / "odd.png", cv::Mat(24, 50, CV_8UC3, cv::Scalar(9)));
    std::ofstream(dir.path() / "odd" / "odd.txt") << "an odd image";
    SdTrainingData odd(data::load_caption_folder(dir.path() / "odd", {}), o, 1);
    odd.cache_latents(*vae, torch::kCPU);
    data::Rng unused(0);
    const auto plan = data::plan_crop(50, 24, {32, 32}, false, unused);
    const float left = static_cast<float>(plan.crop_x);
    const float mirrored = static_cast<float>(plan.resized_width - plan.crop_x - 32);
    ASSERT_NE(left, mirrored) << "the case needs a crop off centre";
    std::set<float> lefts;
    for (int index = 0; index < 8; ++index) {
        const SdBatch batch = odd.make_batch({0}, 0, index);
        lefts.insert(batch.time_ids[0][3].item<float>());
        EXPECT_EQ(batch.time_ids[0][0].item<float>(), 24.f);
        EXPECT_EQ(batch.time_ids[0][1].item<float>(), 50.f);
    }
    EXPECT_EQ(lefts, (std::set<float>{left, mirrored}));
}

// The conditioning of a generated SDXL folder: context is both encoders side by side, pooled
// is the second's projection; cached rows equal a fresh batched forward; the unconditional
// input is zeros (force_zeros_for_empty_prompt).
TEST(Sdxl, TextEncodersCacheAndBatchAgreeAndUnconditionalIsZeros) {
    test_support::TempDir dir("sdxl_text");
    testing::write_tiny_sdxl_model_folder(dir.path() / "model", 4);
    SdModels m = load_sd_models(dir.path() / "model", LoadParts{.unet = false, .vae = false});
    ASSERT_TRUE(m.tokenizer_2);
    // The second tokenizer pads with the token "!" (not the word "!</w>"), the first with EOS.
    EXPECT_NE(m.tokenizer_2->pad_id(), m.tokenizer_2->eos_id());
    EXPECT_NE(m.tokenizer_2->pad_id(), m.tokenizer_2->encode_ids("!").front());
    EXPECT_EQ(m.tokenizer_2->encode("red", 77).back(), m.tokenizer_2->pad_id());
    EXPECT_EQ(m.tokenizer->encode("red", 77).back(), m.tokenizer->eos_id());
    TextEncoders cached(m.text_encoder, *m.tokenizer, m.text_encoder_2, m.tokenizer_2, 1,
                        torch::kCPU);
    TextEncoders fresh(m.text_encoder, *m.tokenizer, m.text_encoder_2, m.tokenizer_2, 1,
                       torch::kCPU);
    fresh.set_trainable(true);
    torch::NoGradGuard no_grad;
    const std::vector<std::string> captions = {"red cat", "square", "red cat"};
    const TextConditioning a = cached.encode(captions);
    const TextConditioning b = fresh.encode(captions);
    EXPECT_EQ(a.context.sizes(), (torch::IntArrayRef{3, 77, 64}));
    EXPECT_EQ(a.pooled.sizes(), (torch::IntArrayRef{3, 32}));
    EXPECT_TRUE(torch::allclose(a.context, b.context, 1e-5, 1e-6));
    EXPECT_TRUE(torch::allclose(a.pooled, b.pooled, 1e-5, 1e-6));
    EXPECT_FALSE(torch::equal(a.context[0], a.context[1]));
    const TextConditioning u = cached.unconditional(2);
    EXPECT_EQ(u.context.sizes(), (torch::IntArrayRef{2, 77, 64}));
    EXPECT_EQ(u.context.abs().max().item<float>(), 0.f);
    EXPECT_EQ(u.pooled.abs().max().item<float>(), 0.f);
}

}  // namespace
}  // namespace crucible::sd
