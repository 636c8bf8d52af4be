// LoRA: the SD 1.5 kohya module list, forward = merged forward, kohya file layout and hash,
// loading back, PEFT layout, UNet and text encoder in one network, and their parameter groups at
// learning rates of their own.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>
#include <tuple>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/safetensors.h"
#include "core/base/sha256.h"
#include "core/engine/fused_optimizers.h"
#include "core/engine/optimizer_factory.h"
#include "core/engine/safetensors_torch.h"
#include "core/engine/schedule.h"
#include "plugins/sd_lora/clip_text.h"
#include "plugins/sd_lora/lora.h"
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
        a->weights.up.normal_(0, 0.2);
    const auto with_lora = unet->forward(x, t, ctx);
    EXPECT_GT((with_lora - base).abs().max().item<double>(), 1e-3);
    net->merge_into_base();
    const auto merged = unet->forward(x, t, ctx);
    EXPECT_LT((merged - with_lora).abs().max().item<double>(), 1e-4);
    EXPECT_EQ(net->adapters[0]->weights.scale, 0.5);
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
            a->weights.up.normal_();
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
    EXPECT_EQ(back->adapters[0]->weights.alpha, 1.0);
    EXPECT_EQ(back->adapters[0]->weights.scale, 0.25);
    EXPECT_TRUE(torch::equal(back->adapters[5]->weights.up,
                             net->adapters[5]->weights.up.to(torch::kFloat16).to(torch::kFloat32)));

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
    // One PEFT writer for both LoRA tasks (core/engine/lora.h): the LLM adapter's keys,
    // without a task type.
    const Json llm_like =
        engine::peft_lora_config(LoraOptions{4, 4, 0, false}, {}, "", "CAUSAL_LM");
    for (const auto& [key, value] : llm_like.items())
        EXPECT_TRUE(cfg.contains(key)) << key;
    EXPECT_TRUE(cfg.at("task_type").is_null());
    EXPECT_DOUBLE_EQ((LoraOptions{16, 8, 0, true}.scale()), 2.0);  // rsLoRA: alpha / sqrt(rank)
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

// Steps `params` with `optimizer` for 4 gradients drawn from seed 21.
void four_steps(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& params) {
    torch::manual_seed(21);
    for (int i = 0; i < 4; ++i) {
        for (const auto& p : params)
            p.mutable_grad() = torch::randn_like(p);
        optimizer.step();
    }
}

// The network's groups in the engine's optimizer, at the schedule's rates: with unet_lr twice
// text_encoder_lr, each adapter moves exactly as a plain optimizer at its own rate moves it.
TEST(LoraGroups, UnetAtTwiceTheTextEncodersRateStepsAsAnOptimizerAtEachRate) {
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
            a->weights.up.normal_();
        return n;
    };
    const double lr = 1e-2, decay = 0.1;
    for (const std::string name : {"AdamW", "SGD"}) {
        SCOPED_TRACE(name);
        // The run's learning rate is text_encoder_lr; unet_lr is twice that: factors 2 and 1.
        auto grouped = make();
        const engine::ParamGroups groups = lora_parameter_groups(*grouped, 2.0, 1.0);
        ASSERT_EQ(engine::group_names(groups), (std::vector<std::string>{"unet", "text_encoder"}));
        EXPECT_EQ(groups[0].params.size(), 2u);  // one UNet adapter: down, up
        EXPECT_EQ(groups[1].params.size(), 4u);  // two text-encoder adapters
        auto optimizer = engine::make_optimizer({name, lr, 0.9, 0.0}, groups, decay);
        engine::ScheduleConfig schedule;
        schedule.lrf = 1.0;
        schedule.momentum = 0.9;
        schedule.has_momentum = name == "SGD";
        for (const auto& g : groups)
            schedule.groups.push_back({lr * g.lr_factor, g.warmup});
        const auto rates = engine::schedule_at(schedule, 0, 0).lr;
        ASSERT_EQ(rates, (std::vector<double>{2 * lr, lr}));
        for (std::size_t j = 0; j < groups.size(); ++j)
            engine::set_group_lr(*optimizer, j, rates[j]);
        four_steps(*optimizer, engine::all_parameters(groups));

        // Reference: the same adapters, one plain optimizer (of the engine's kind) per rate.
        auto plain = make();
        const engine::ParamGroups same = lora_parameter_groups(*plain, 1.0, 1.0);
        auto reference = [&](const std::vector<torch::Tensor>& params,
                             double rate) -> std::unique_ptr<torch::optim::Optimizer> {
            if (name == "AdamW")
                return std::make_unique<engine::FusedAdamW>(params,
                                                            torch::optim::AdamWOptions(rate)
                                                                .betas(std::make_tuple(0.9, 0.999))
                                                                .weight_decay(decay));
            return std::make_unique<engine::FusedSgd>(
                params,
                torch::optim::SGDOptions(rate).momentum(0.9).nesterov(true).weight_decay(decay));
        };
        auto unet_opt = reference(same[0].params, 2 * lr);
        auto text_opt = reference(same[1].params, lr);
        // The gradients of four_steps, drawn in the same order over all parameters.
        torch::manual_seed(21);
        const auto all = engine::all_parameters(same);
        for (int i = 0; i < 4; ++i) {
            for (const auto& p : all)
                p.mutable_grad() = torch::randn_like(p);
            unet_opt->step();
            text_opt->step();
        }
        const auto moved = engine::all_parameters(groups);
        for (std::size_t i = 0; i < all.size(); ++i)
            EXPECT_TRUE(torch::equal(moved[i], all[i])) << i;
        // The adapters did move.
        EXPECT_FALSE(torch::equal(moved[1], make()->adapters[0]->weights.up));
    }
}

}  // namespace
}  // namespace crucible::sd
