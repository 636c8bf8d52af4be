// LoRA: the SD 1.5 kohya module list, forward = merged forward, kohya file layout and hash,
// loading back, PEFT layout, UNet and text encoder in one network, learning rates of their own.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>
#include <tuple>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/safetensors.h"
#include "core/base/sha256.h"
#include "core/engine/safetensors_torch.h"
#include "plugins/sd_lora/clip_text.h"
#include "plugins/sd_lora/lora.h"
#include "plugins/sd_lora/lr_scale.h"
#include "plugins/sd_lora/unet.h"
#include "tests/sd_lora/sd_test_util.h"

namespace crucible::sd {
namespace {
namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(CRUCIBLE_FIXTURES_DIR) / "sd";

TEST(Lora, Sd15UNetTargetsAreTheKohyaList) {
    const Json want = read_json_file(kFixtures / "sd15_unet_kohya_lora_modules.json");
    ASSERT_EQ(want.size(), 192u);
    ParamInitGuard meta(ParamInit::Meta);
    UNet unet(UNetConfig::sd15());
    const auto targets = unet_lora_targets(*unet);
    ASSERT_EQ(targets.size(), 192u);
    using Row = std::tuple<std::string, std::string, std::int64_t, std::int64_t, std::string>;
    std::set<Row> a, b;
    for (const auto& m : want)
        a.emplace(m.at("module"), m.at("kohya"), m.at("in"), m.at("out"), m.at("kind"));
    for (const auto& t : targets)
        b.emplace(t.module, t.kohya, t.in, t.out, t.conv ? "conv1x1" : "linear");
    EXPECT_EQ(a, b);
    // A full-size network lays out on the meta device too: 192 down/up pairs.
    LoraNetwork net(targets, LoraOptions{});
    EXPECT_EQ(net->parameters().size(), 384u);
}

TEST(Lora, ForwardEqualsMergedForwardAndStartsAtTheBase) {
    torch::manual_seed(2);
    UNet unet(UNetConfig::tiny());
    unet->eval();
    const auto targets = unet_lora_targets(*unet);
    // 6 spatial transformers (2 down, 1 mid, 3 up), 12 targets each (proj_in/out + 10 Linear).
    EXPECT_EQ(targets.size(), 6u * 12);
    torch::NoGradGuard no_grad;
    const auto x = torch::randn({1, 4, 16, 16});
    const auto t = torch::tensor({500});
    const auto ctx = torch::randn({1, 77, 32});
    const auto base = unet->forward(x, t, ctx);
    LoraOptions o;
    o.rank = 4;
    o.alpha = 2;
    LoraNetwork net(targets, o);
    net->eval();
    net->install();
    EXPECT_TRUE(torch::equal(unet->forward(x, t, ctx), base));  // B = 0
    for (auto& a : net->adapters)
        a->up.normal_(0, 0.2);
    const auto with_lora = unet->forward(x, t, ctx);
    EXPECT_GT((with_lora - base).abs().max().item<double>(), 1e-3);
    net->merge_into_base();
    const auto merged = unet->forward(x, t, ctx);
    EXPECT_LT((merged - with_lora).abs().max().item<double>(), 1e-4);
    EXPECT_EQ(net->adapters[0]->scale, 0.5);
}

TEST(Lora, KohyaFileLayoutHashAndRoundTrip) {
    torch::manual_seed(4);
    UNet unet(UNetConfig::tiny());
    const auto targets = unet_lora_targets(*unet);
    LoraOptions o;
    o.rank = 4;
    o.alpha = 1;
    LoraNetwork net(targets, o);
    {
        torch::NoGradGuard no_grad;
        for (auto& a : net->adapters)
            a->up.normal_();
    }
    const auto state = net->kohya_state(torch::kFloat16);
    EXPECT_EQ(state.size(), targets.size() * 3);
    const std::string k = "lora_unet_down_blocks_0_attentions_0_transformer_blocks_0_attn1_to_q";
    EXPECT_EQ(state.at(k + ".lora_down.weight").sizes(), (std::vector<std::int64_t>{4, 32}));
    EXPECT_EQ(state.at(k + ".lora_up.weight").sizes(), (std::vector<std::int64_t>{32, 4}));
    EXPECT_EQ(state.at(k + ".alpha").dim(), 0);
    EXPECT_EQ(state.at(k + ".alpha").scalar_type(), torch::kFloat16);
    const std::string p = "lora_unet_up_blocks_1_attentions_2_proj_out";
    EXPECT_EQ(state.at(p + ".lora_down.weight").sizes(), (std::vector<std::int64_t>{4, 32, 1, 1}));
    EXPECT_EQ(state.at(p + ".lora_up.weight").sizes(), (std::vector<std::int64_t>{32, 4, 1, 1}));
    EXPECT_TRUE(state.count(
        "lora_unet_mid_block_attentions_0_transformer_blocks_0_ff_net_0_proj.lora_up.weight"));
    EXPECT_EQ(state
                  .at("lora_unet_mid_block_attentions_0_transformer_blocks_0_ff_net_0_proj.lora_up."
                      "weight")
                  .size(0),
              8 * 64);

    const fs::path dir = testing::fresh_dir("lora");
    const std::string hash =
        save_kohya_lora(dir / "x.safetensors", state,
                        {{"ss_network_dim", "4"}, {"ss_network_module", "networks.lora"}});
    const std::string bytes = read_file_bytes(dir / "x.safetensors");
    EXPECT_EQ(hash, safetensors_data_hash(bytes));
    const auto file = SafetensorsFile::open(dir / "x.safetensors");
    EXPECT_EQ(file.metadata().at("sshs_model_hash"), hash);
    EXPECT_EQ(file.metadata().at("ss_network_dim"), "4");
    // The hash covers exactly the bytes after the header.
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
    EXPECT_EQ(hash, sha256_hex(std::string_view(bytes).substr(8 + n)));

    LoraNetwork back(targets, LoraOptions{4, 3.0, 0, false});
    back->load_kohya_state(engine::load_safetensors(file), file.where());
    EXPECT_EQ(back->adapters[0]->alpha, 1.0);
    EXPECT_EQ(back->adapters[0]->scale, 0.25);
    EXPECT_TRUE(torch::equal(back->adapters[5]->up,
                             net->adapters[5]->up.to(torch::kFloat16).to(torch::kFloat32)));

    auto broken = engine::load_safetensors(file);
    broken.erase(k + ".lora_up.weight");
    broken["lora_unet_nowhere.lora_up.weight"] = torch::zeros({1});
    broken[p + ".lora_down.weight"] = torch::zeros({8, 32, 1, 1});
    try {
        back->load_kohya_state(broken, "broken.safetensors");
        ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find(k + ".lora_up.weight"), std::string::npos) << m;
        EXPECT_NE(m.find("lora_unet_nowhere"), std::string::npos) << m;
        EXPECT_NE(m.find("[8, 32, 1, 1]"), std::string::npos) << m;
    }
    EXPECT_THROW(LoraNetwork(targets, LoraOptions{0, 1, 0, false}), InputError);
}

TEST(Lora, PeftLayout) {
    UNet unet(UNetConfig::tiny());
    const auto targets = unet_lora_targets(*unet);
    LoraNetwork net(targets, LoraOptions{4, 4, 0, false});
    const fs::path dir = testing::fresh_dir("peft");
    net->save_peft(dir / "adapter", "runwayml/stable-diffusion-v1-5");
    const Json cfg = read_json_file(dir / "adapter" / "adapter_config.json");
    EXPECT_EQ(cfg.at("peft_type"), "LORA");
    EXPECT_EQ(cfg.at("r"), 4);
    const auto mods = cfg.at("target_modules").get<std::set<std::string>>();
    EXPECT_EQ(mods, (std::set<std::string>{"to_q", "to_k", "to_v", "to_out.0", "proj_in",
                                           "proj_out", "proj", "net.2"}));
    const auto file = SafetensorsFile::open(dir / "adapter" / "adapter_model.safetensors");
    EXPECT_EQ(file.size(), targets.size() * 2);
    EXPECT_NE(file.find("base_model.model.down_blocks.0.attentions.0.transformer_blocks.0.attn2.to_"
                        "k.lora_A.weight"),
              nullptr);
}

TEST(Lora, UNetAndTextEncoderInOneNetwork) {
    UNet unet(UNetConfig::tiny());
    ClipTextModel text(ClipTextConfig::tiny());
    auto targets = unet_lora_targets(*unet);
    const auto text_targets = text_encoder_lora_targets(*text);
    ASSERT_EQ(text_targets.size(), 2u * 6);  // 2 layers: q/k/v/out_proj, fc1, fc2
    targets.insert(targets.end(), text_targets.begin(), text_targets.end());
    LoraNetwork net(targets, LoraOptions{4, 4, 0, false});
    const auto state = net->kohya_state();
    std::size_t te = 0, un = 0;
    for (const auto& [key, t] : state) {
        te += key.rfind("lora_te_", 0) == 0 ? 1 : 0;
        un += key.rfind("lora_unet_", 0) == 0 ? 1 : 0;
    }
    EXPECT_EQ(te, 12u * 3);
    EXPECT_EQ(un, 72u * 3);
    const std::string fc1 = "lora_te_text_model_encoder_layers_1_mlp_fc1";
    EXPECT_EQ(state.at(fc1 + ".lora_down.weight").sizes(), (std::vector<std::int64_t>{4, 32}));
    EXPECT_EQ(state.at(fc1 + ".lora_up.weight").sizes(), (std::vector<std::int64_t>{37, 4}));

    // PEFT: one model per folder.
    const fs::path dir = testing::fresh_dir("peft_te");
    net->save_peft(dir / "unet", "base", "lora_unet");
    net->save_peft(dir / "text_encoder", "base", "lora_te");
    const auto u = SafetensorsFile::open(dir / "unet" / "adapter_model.safetensors");
    const auto t = SafetensorsFile::open(dir / "text_encoder" / "adapter_model.safetensors");
    EXPECT_EQ(u.size(), 72u * 2);
    EXPECT_EQ(t.size(), 12u * 2);
    EXPECT_NE(t.find("base_model.model.text_model.encoder.layers.0.self_attn.q_proj.lora_A.weight"),
              nullptr);
    const auto mods = read_json_file(dir / "text_encoder" / "adapter_config.json")
                          .at("target_modules")
                          .get<std::set<std::string>>();
    EXPECT_EQ(mods,
              (std::set<std::string>{"q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2"}));
}

// Steps `params` with `optimizer` for 4 gradients drawn from seed 21, settling `net` (which holds
// them) around each step as the task does.
void four_steps(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& params,
                LoraNetworkImpl* net) {
    torch::manual_seed(21);
    for (int i = 0; i < 4; ++i) {
        if (net) net->begin_step();
        for (const auto& p : params)
            p.mutable_grad() = torch::randn_like(p);
        optimizer.step();
    }
    if (net) net->settle();
}

TEST(LrScale, AStepTimesTheRatioIsAStepWithTheScaledRate) {
    UNet unet(UNetConfig::tiny());
    ClipTextModel text(ClipTextConfig::tiny());
    const auto text_targets = text_encoder_lora_targets(*text);
    std::vector<LoraTarget> targets = {unet_lora_targets(*unet).front()};
    targets.insert(targets.end(), text_targets.begin(), text_targets.begin() + 2);
    auto make = [&] {
        torch::manual_seed(3);
        LoraNetwork n(targets, LoraOptions{4, 4, 0, false});
        torch::NoGradGuard no_grad;
        for (auto& a : n->adapters)
            a->up.normal_();
        return n;
    };
    for (const std::string name : {"AdamW", "SGD"}) {
        SCOPED_TRACE(name);
        auto optimizer_for = [&](const std::vector<torch::Tensor>& unet_params,
                                 const std::vector<torch::Tensor>& text_params,
                                 double text_lr) -> std::unique_ptr<torch::optim::Optimizer> {
            if (name == "AdamW") {
                std::vector<torch::optim::OptimizerParamGroup> groups;
                groups.emplace_back(unet_params,
                                    std::make_unique<torch::optim::AdamWOptions>(
                                        torch::optim::AdamWOptions(1e-2).weight_decay(0.1)));
                groups.emplace_back(text_params,
                                    std::make_unique<torch::optim::AdamWOptions>(
                                        torch::optim::AdamWOptions(text_lr).weight_decay(0.1)));
                return std::make_unique<torch::optim::AdamW>(groups);
            }
            std::vector<torch::optim::OptimizerParamGroup> groups;
            groups.emplace_back(
                unet_params,
                std::make_unique<torch::optim::SGDOptions>(
                    torch::optim::SGDOptions(1e-2).momentum(0.9).nesterov(true).weight_decay(0.1)));
            groups.emplace_back(
                text_params,
                std::make_unique<torch::optim::SGDOptions>(
                    torch::optim::SGDOptions(text_lr).momentum(0.9).nesterov(true).weight_decay(
                        0.1)));
            return std::make_unique<torch::optim::SGD>(groups, torch::optim::SGDOptions(1e-2));
        };
        auto split = [](LoraNetworkImpl& n) {
            std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> out;
            for (std::size_t i = 0; i < n.targets.size(); ++i)
                for (const auto& p : n.adapters[i]->parameters())
                    (n.targets[i].kohya.rfind("lora_te_", 0) == 0 ? out.second : out.first)
                        .push_back(p);
            return out;
        };
        // Reference: the text encoder's group at 0.25 × the rate.
        auto direct = make();
        const auto [du, dt] = split(*direct);
        auto direct_opt = optimizer_for(du, dt, 0.25e-2);
        // Scaled: one rate for all, the text encoder's changes scaled by 0.25.
        auto scaled = make();
        scaled->scale_learning_rates({{"lora_unet", 1.0}, {"lora_te", 0.25}});
        ASSERT_TRUE(scaled->lr_scale);
        EXPECT_EQ(scaled->lr_scale->size(), 4u);  // two text-encoder adapters: down, up
        const auto [su, st] = split(*scaled);
        auto scaled_opt = optimizer_for(su, st, 1e-2);
        std::vector<torch::Tensor> all_direct = du, all_scaled = su;
        all_direct.insert(all_direct.end(), dt.begin(), dt.end());
        all_scaled.insert(all_scaled.end(), st.begin(), st.end());
        four_steps(*direct_opt, all_direct, nullptr);
        four_steps(*scaled_opt, all_scaled, scaled.get());
        for (std::size_t i = 0; i < all_direct.size(); ++i) {
            EXPECT_LT((all_direct[i] - all_scaled[i]).abs().max().item<double>(), 1e-6) << i;
        }
        // The text encoder did move, by less than the UNet.
        EXPECT_FALSE(torch::equal(st[1], make()->adapters[1]->up));
    }
}

TEST(LrScale, SettlesOnceAndTravelsWithTheModuleState) {
    UNet unet(UNetConfig::tiny());
    const auto targets = unet_lora_targets(*unet);
    LoraNetwork net(std::vector<LoraTarget>(targets.begin(), targets.begin() + 2),
                    LoraOptions{2, 2, 0, false});
    net->scale_learning_rates({{"lora_unet", 3.0}});
    auto& up = net->adapters[0]->up;
    net->begin_step();
    torch::NoGradGuard no_grad;
    up.add_(1.0);  // a step of +1
    // A copy of the module state between the step and its settling settles the same way.
    LoraNetwork copy(std::vector<LoraTarget>(targets.begin(), targets.begin() + 2),
                     LoraOptions{2, 2, 0, false});
    copy->scale_learning_rates({{"lora_unet", 3.0}});
    for (const auto& item : net->named_parameters())
        copy->named_parameters()[item.key()].copy_(item.value());
    for (const auto& item : net->named_buffers())
        copy->named_buffers()[item.key()].copy_(item.value());
    EXPECT_EQ(net->named_buffers().size(), 2u * 2 + 1);  // before-values and `pending`
    net->settle();
    EXPECT_TRUE(torch::allclose(up, torch::full_like(up, 3.0)));
    net->settle();  // nothing pending
    EXPECT_TRUE(torch::allclose(up, torch::full_like(up, 3.0)));
    net->begin_step();  // no step in between: nothing changes
    net->settle();
    EXPECT_TRUE(torch::allclose(up, torch::full_like(up, 3.0)));
    copy->settle();
    EXPECT_TRUE(torch::equal(copy->adapters[0]->up, up));
    // Ratios of 1 add nothing.
    LoraNetwork plain(targets, LoraOptions{2, 2, 0, false});
    plain->scale_learning_rates({{"lora_unet", 1.0}, {"lora_te", 0.5}});
    EXPECT_FALSE(plain->lr_scale);
    EXPECT_TRUE(plain->named_buffers().is_empty());
}

}  // namespace
}  // namespace crucible::sd
