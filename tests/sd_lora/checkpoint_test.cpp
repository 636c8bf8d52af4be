// Single-file (LDM) names against the reference table; diffusers folders and single files of the
// same weights give the same outputs; broken checkpoints name the tensor at fault.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>

#include "core/base/error.h"
#include "core/base/json.h"
#include "core/engine/safetensors_torch.h"
#include "plugins/sd_lora/checkpoint_io.h"
#include "plugins/sd_lora/ldm_names.h"
#include "plugins/sd_lora/state_dict.h"
#include "tests/sd_lora/sd_test_util.h"

namespace crucible::sd {
namespace {
namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(CRUCIBLE_FIXTURES_DIR) / "sd";

TEST(LdmNames, UNetAndVaeMatchTheReferenceTable) {
    const Json table = read_json_file(kFixtures / "sd15_diffusers_to_ldm_names.json");
    const UNetConfig u = UNetConfig::sd15();
    ASSERT_EQ(table.at("unet").size(), 686u);
    for (const auto& [name, ldm] : table.at("unet").items()) {
        const auto got = unet_ldm_name(name, u.layers_per_block, u.down_cross_attention);
        ASSERT_TRUE(got.has_value()) << name;
        EXPECT_EQ(*got, ldm.get<std::string>()) << name;
    }
    const Json shapes = read_json_file(kFixtures / "sd15_vae_state_dict_shapes.json");
    ASSERT_EQ(table.at("vae").size(), 248u);
    for (const auto& [name, entry] : table.at("vae").items()) {
        const auto got = vae_ldm_name(name, 4);
        ASSERT_TRUE(got.has_value()) << name;
        EXPECT_EQ(*got, entry.at("ldm").get<std::string>()) << name;
        // Shapes agree, or the LDM one is the diffusers one with trailing 1x1 (attention convs).
        auto want = shapes.at(name).get<std::vector<std::int64_t>>();
        auto ldm_shape = entry.at("ldm_shape").get<std::vector<std::int64_t>>();
        if (ldm_shape != want) {
            want.insert(want.end(), {1, 1});
            EXPECT_EQ(ldm_shape, want) << name;
            EXPECT_NE(got->find(".mid.attn_1."), std::string::npos) << name;
        }
    }
    EXPECT_EQ(text_encoder_ldm_name("text_model.final_layer_norm.weight"),
              "cond_stage_model.transformer.text_model.final_layer_norm.weight");
}

TEST(LdmNames, EveryParameterMapsOnceForOtherSizesToo) {
    for (const auto& [uc, vc] : {std::pair{UNetConfig::sd15(), VaeConfig::sd15()},
                                 std::pair{UNetConfig::tiny(), VaeConfig::tiny()}}) {
        const auto map = ldm_name_map(uc, vc);
        std::set<std::string> targets;
        for (const auto& [name, ldm] : map) {
            EXPECT_FALSE(ldm.empty()) << name;
            EXPECT_TRUE(targets.insert(ldm).second) << "two names map to " << ldm;
        }
    }
    EXPECT_FALSE(unet_ldm_name("down_blocks.0.resnets.9.conv1.weight", 2, {true}).has_value());
    EXPECT_FALSE(unet_ldm_name("nonsense", 2, {true}).has_value());
    EXPECT_FALSE(unet_ldm_name("down_blocks.x.resnets.0.conv1.weight", 2, {true}).has_value());
    EXPECT_FALSE(vae_ldm_name("encoder.down_blocks.7.resnets.0.conv1.weight", 4).has_value());
}

class TinyCheckpoints : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = testing::fresh_dir("ckpt");
        testing::write_tiny_model_folder(dir_ / "diffusers", 3);
        SdModels m = load_diffusers_folder(dir_ / "diffusers");
        save_single_file(dir_ / "single.safetensors", m);
    }
    static SdModelConfigs tiny_configs() {
        SdModelConfigs c;
        c.unet = UNetConfig::tiny();
        c.vae = VaeConfig::tiny();
        c.text = ClipTextConfig::tiny();
        c.text.vocab_size = 600;
        return c;
    }
    static inline fs::path dir_;
};

TEST_F(TinyCheckpoints, SingleFileAndDiffusersTwinGiveTheSameOutputs) {
    SdModels a = load_sd_models(dir_ / "diffusers");
    SdModels b = load_sd_models(dir_ / "single.safetensors", {}, tiny_configs());
    ASSERT_TRUE(a.tokenizer.has_value());
    torch::NoGradGuard no_grad;
    torch::manual_seed(5);
    const auto x = torch::randn({1, 4, 16, 16});
    const auto t = torch::tensor({321});
    const auto ctx = torch::randn({1, 77, 32});
    const auto ua = a.unet->forward(x, t, ctx);
    EXPECT_TRUE(torch::equal(ua, b.unet->forward(x, t, ctx)));
    EXPECT_GT(ua.abs().sum().item<double>(), 0);
    const auto img = torch::rand({1, 3, 32, 32}) * 2 - 1;
    EXPECT_TRUE(torch::equal(a.vae->encode(img).mean, b.vae->encode(img).mean));
    EXPECT_TRUE(torch::equal(a.vae->decode(x), b.vae->decode(x)));
    const auto ids = torch::randint(0, 500, {1, 77}, torch::kLong);
    EXPECT_TRUE(torch::equal(a.text_encoder->forward(ids), b.text_encoder->forward(ids)));
    // The file really uses the LDM layout.
    const auto names = SafetensorsFile::open(dir_ / "single.safetensors").names();
    const std::set<std::string> set(names.begin(), names.end());
    EXPECT_TRUE(set.count("model.diffusion_model.input_blocks.0.0.weight"));
    EXPECT_TRUE(set.count("first_stage_model.decoder.mid.attn_1.q.weight"));
    EXPECT_TRUE(set.count("cond_stage_model.transformer.text_model.final_layer_norm.weight"));
}

TEST_F(TinyCheckpoints, BrokenSingleFilesNameTheTensor) {
    auto tensors = engine::load_safetensors(dir_ / "single.safetensors");
    struct Case {
        std::string name;
        std::function<void(std::map<std::string, torch::Tensor>&)> edit;
        std::string expect;
    };
    const std::vector<Case> cases = {
        {"missing unet", [](auto& t) { t.erase("model.diffusion_model.out.2.weight"); },
         "model.diffusion_model.out.2.weight (conv_out.weight)"},
        {"missing vae", [](auto& t) { t.erase("first_stage_model.encoder.mid.attn_1.k.bias"); },
         "first_stage_model.encoder.mid.attn_1.k.bias"},
        {"shape", [](auto& t) { t["model.diffusion_model.time_embed.0.bias"] = torch::zeros({3}); },
         "model.diffusion_model.time_embed.0.bias: file [3] vs model [128]"},
        {"extra",
         [](auto& t) { t["model.diffusion_model.input_blocks.99.0.weight"] = torch::zeros({1}); },
         "model.diffusion_model.input_blocks.99.0.weight"},
        {"text",
         [](auto& t) {
             t.erase("cond_stage_model.transformer.text_model.encoder.layers.1.mlp.fc2.bias");
         },
         "text_model.encoder.layers.1.mlp.fc2.bias"},
    };
    for (const auto& c : cases) {
        auto copy = tensors;
        c.edit(copy);
        const fs::path file =
            dir_ / ("broken_" + std::to_string(&c - cases.data()) + ".safetensors");
        engine::save_safetensors(file, copy);
        try {
            load_single_file(file, tiny_configs());
            ADD_FAILURE() << c.name << " loaded";
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos)
                << c.name << ": " << e.what();
            EXPECT_NE(std::string(e.what()).find(file.filename().string()), std::string::npos)
                << e.what();
        }
    }
}

TEST_F(TinyCheckpoints, BadPathsAndFoldersAreInputErrors) {
    EXPECT_THROW(load_sd_models(dir_ / "nope"), InputError);
    fs::create_directories(dir_ / "empty_folder");
    EXPECT_THROW(load_sd_models(dir_ / "empty_folder"), InputError);
    testing::write_tiny_tokenizer(dir_ / "tok");
    EXPECT_THROW(load_sd_models(dir_ / "tok" / "vocab.json"), InputError);
    // A diffusers folder whose UNet weights are of another config.
    fs::create_directories(dir_ / "mixed" / "unet");
    fs::copy_file(dir_ / "diffusers" / "unet" / "diffusion_pytorch_model.safetensors",
                  dir_ / "mixed" / "unet" / "diffusion_pytorch_model.safetensors");
    Json cfg = UNetConfig::tiny().to_diffusers_json();
    cfg["block_out_channels"] = {32, 96};
    write_json_file(dir_ / "mixed" / "unet" / "config.json", cfg);
    LoadParts only_unet;
    only_unet.vae = only_unet.text_encoder = false;
    try {
        load_diffusers_folder(dir_ / "mixed", only_unet);
        ADD_FAILURE() << "mismatched config loaded";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("mismatched"), std::string::npos) << e.what();
    }
    cfg["use_linear_projection"] = true;
    write_json_file(dir_ / "mixed" / "unet" / "config.json", cfg);
    EXPECT_THROW(load_diffusers_folder(dir_ / "mixed", only_unet), InputError);
}

}  // namespace
}  // namespace crucible::sd
