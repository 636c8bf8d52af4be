// Parameter groups, optimizer groups, EMA arithmetic, loss scaler, results table, run folders.
#include <gtest/gtest.h>

#include <regex>

#include <cmath>
#include <filesystem>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/engine/ema.h"
#include "core/engine/grad_clip.h"
#include "core/engine/host_read.h"
#include "core/engine/loss_scaler.h"
#include "core/engine/optimizer_factory.h"
#include "core/engine/param_groups.h"
#include "core/engine/results_csv.h"
#include "core/engine/run_folder.h"
#include "core/engine/task.h"
#include "tests/engine/toy_task.h"
#include "tests/support/temp_dir.h"

namespace crucible::engine {
namespace {

struct NetImpl : torch::nn::Module {
    NetImpl()
        : conv(register_module("conv",
                               torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 4, 3).bias(false)))),
          bn(register_module("bn", torch::nn::BatchNorm2d(4))),
          fc(register_module("fc", torch::nn::Linear(4, 2))),
          frozen(register_module("frozen", torch::nn::Linear(2, 2))) {
        for (auto& p : frozen->parameters())
            p.set_requires_grad(false);
    }
    torch::nn::Conv2d conv;
    torch::nn::BatchNorm2d bn;
    torch::nn::Linear fc;
    torch::nn::Linear frozen;
};
TORCH_MODULE(Net);

TEST(ParamGroups, DefaultRuleSplitsBiasesWeightsAndNormWeights) {
    Net net;
    const ParamGroups g = default_parameter_split(*net);
    ASSERT_EQ(group_names(g), (std::vector<std::string>{"pg0", "pg1", "pg2"}));
    EXPECT_EQ(g[0].param_names, (std::vector<std::string>{"bn.bias", "fc.bias"}));
    EXPECT_EQ(g[1].param_names, (std::vector<std::string>{"conv.weight", "fc.weight"}));
    EXPECT_EQ(g[2].param_names, (std::vector<std::string>{"bn.weight"}));
    EXPECT_EQ(parameter_count(g), 5u);  // frozen parameters left out
    EXPECT_EQ(g[0].decay, WeightDecay::None);
    EXPECT_EQ(g[1].decay, WeightDecay::Scaled);
    EXPECT_EQ(g[2].decay, WeightDecay::None);
    EXPECT_EQ(g[0].warmup, Warmup::Bias);
    EXPECT_EQ(g[1].warmup, Warmup::Ramp);
    EXPECT_EQ(g[2].warmup, Warmup::Ramp);
    for (const auto& group : g)
        EXPECT_EQ(group.lr_factor, 1.0);
    EXPECT_NO_THROW(check_param_groups(g));
    // Empty groups stay: results.csv keeps lr/pg0..2 whatever the model has.
    auto linear = torch::nn::Linear(torch::nn::LinearOptions(2, 2).bias(false));
    const ParamGroups only_weights = default_parameter_split(*linear);
    ASSERT_EQ(only_weights.size(), 3u);
    EXPECT_TRUE(only_weights[0].params.empty());
    EXPECT_EQ(only_weights[1].params.size(), 1u);
}

TEST(ParamGroups, TrainableParametersFormOneGroupInModuleOrder) {
    Net net;
    const ParamGroup g = trainable_parameters(*net, "lora");
    EXPECT_EQ(g.name, "lora");
    EXPECT_EQ(g.param_names, (std::vector<std::string>{"conv.weight", "bn.weight", "bn.bias",
                                                       "fc.weight", "fc.bias"}));
    EXPECT_EQ(g.decay, WeightDecay::Scaled);
    EXPECT_EQ(g.warmup, Warmup::Ramp);
}

TEST(ParamGroups, BadDeclarationsAreRefused) {
    Net net;
    const ParamGroups good = default_parameter_split(*net);
    auto expect_refused = [](const ParamGroups& g, const std::string& words) {
        try {
            check_param_groups(g);
            ADD_FAILURE() << "accepted; expected: " << words;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
        }
    };
    expect_refused({}, "no parameter groups");
    ParamGroups twice = good;
    twice[2].name = "pg0";
    expect_refused(twice, "declared twice");
    ParamGroups spaced = good;
    spaced[1].name = "my group";
    expect_refused(spaced, "letters, digits");
    ParamGroups negative = good;
    negative[1].lr_factor = -1;
    expect_refused(negative, "learning-rate factor");
    ParamGroups shared = good;
    shared[2].add("fc.weight again", shared[1].params[1]);
    expect_refused(shared, "fc.weight again");
}

TEST(ParamGroups, OptimizerGroupsCarryDecayOnlyOnWeights) {
    Net net;
    const ParamGroups g = default_parameter_split(*net);
    auto opt = make_optimizer({"SGD", 0.01, 0.937, 0.1}, g, 5e-4);
    ASSERT_EQ(opt->param_groups().size(), 3u);
    auto& pg0 = static_cast<torch::optim::SGDOptions&>(opt->param_groups()[0].options());
    auto& pg1 = static_cast<torch::optim::SGDOptions&>(opt->param_groups()[1].options());
    auto& pg2 = static_cast<torch::optim::SGDOptions&>(opt->param_groups()[2].options());
    EXPECT_EQ(pg0.weight_decay(), 0.0);
    EXPECT_EQ(pg1.weight_decay(), 5e-4);
    EXPECT_EQ(pg2.weight_decay(), 0.0);
    EXPECT_TRUE(pg1.nesterov());
    set_group_lr(*opt, 1, 0.123);
    set_group_momentum(*opt, 2, 0.85);
    EXPECT_DOUBLE_EQ(group_lr(*opt, 1), 0.123);
    EXPECT_DOUBLE_EQ(pg2.momentum(), 0.85);
    auto adamw = make_optimizer({"AdamW", 0.002, 0.9, 0.0}, g, 5e-4);
    auto& a1 = static_cast<torch::optim::AdamWOptions&>(adamw->param_groups()[1].options());
    auto& a0 = static_cast<torch::optim::AdamWOptions&>(adamw->param_groups()[0].options());
    EXPECT_EQ(a1.weight_decay(), 5e-4);
    EXPECT_EQ(a0.weight_decay(), 0.0);  // not AdamW's default 1e-2
    EXPECT_EQ(std::get<0>(a1.betas()), 0.9);
}

TEST(ParamGroups, OptimizerHasOneGroupPerDeclaredGroupWithItsFactor) {
    Net net;
    ParamGroup body = trainable_parameters(*net, "body");
    ParamGroup head;
    head.name = "head";
    head.decay = WeightDecay::None;
    head.lr_factor = 0.25;
    head.add("fc.weight", body.params.at(3));
    body.params.erase(body.params.begin() + 3);
    body.param_names.erase(body.param_names.begin() + 3);
    auto opt = make_optimizer({"AdamW", 0.002, 0.9, 0.0}, {body, head}, 1e-3);
    ASSERT_EQ(opt->param_groups().size(), 2u);
    EXPECT_EQ(opt->param_groups()[0].params().size(), 4u);
    auto& b = static_cast<torch::optim::AdamWOptions&>(opt->param_groups()[0].options());
    auto& h = static_cast<torch::optim::AdamWOptions&>(opt->param_groups()[1].options());
    EXPECT_EQ(b.weight_decay(), 1e-3);
    EXPECT_EQ(h.weight_decay(), 0.0);
    EXPECT_EQ(b.lr(), 0.002);
    EXPECT_EQ(h.lr(), 0.0005);
}

TEST(Ema, DecayRampAndUpdateArithmetic) {
    Net model, copy;
    ModelEma ema(copy.ptr(), *model);
    EXPECT_NEAR(ema.decay_at(1), 0.9999 * (1 - std::exp(-1.0 / 2000)), 1e-15);
    EXPECT_NEAR(ema.decay_at(2000), 0.9999 * (1 - std::exp(-1.0)), 1e-15);
    const torch::Tensor w0 = model->fc->weight.detach().clone();
    const torch::Tensor rm0 = model->bn->running_mean.clone();
    {
        torch::NoGradGuard g;
        model->fc->weight.add_(1.0);
        model->bn->running_mean.fill_(2.0);
        model->bn->num_batches_tracked.fill_(7);
    }
    ema.update(*model);
    const double d = ema.decay_at(1);
    EXPECT_TRUE(torch::allclose(copy->fc->weight, w0 * d + (w0 + 1.0) * (1 - d), 1e-6, 1e-7));
    EXPECT_TRUE(torch::allclose(copy->bn->running_mean, rm0 * d + 2.0 * (1 - d), 1e-6, 1e-7));
    EXPECT_EQ(copy->bn->num_batches_tracked.item<std::int64_t>(), 7);  // integer buffers copied
    EXPECT_EQ(ema.updates(), 1);
    EXPECT_FALSE(copy->fc->weight.requires_grad());
}

TEST(LossScaler, BackoffOnInfAndGrowthAfterInterval) {
    DynamicLossScaler scaler(true, 1024.0, 2.0, 0.5, 2);
    auto p = torch::ones({2}, torch::requires_grad());
    scaler.scale_loss((p * 3).sum()).backward();
    EXPECT_DOUBLE_EQ(p.grad()[0].item<double>(), 3 * 1024.0);
    EXPECT_TRUE(scaler.unscale({p}));
    EXPECT_DOUBLE_EQ(p.grad()[0].item<double>(), 3.0);
    scaler.update(false);
    scaler.update(false);
    EXPECT_DOUBLE_EQ(scaler.scale(), 2048.0);
    {
        torch::NoGradGuard g;
        p.mutable_grad().fill_(std::numeric_limits<float>::infinity());
    }
    EXPECT_FALSE(scaler.unscale({p}));
    scaler.update(true);
    EXPECT_DOUBLE_EQ(scaler.scale(), 1024.0);
    DynamicLossScaler restored(true);
    restored.load_state(scaler.state());
    EXPECT_DOUBLE_EQ(restored.scale(), 1024.0);
    DynamicLossScaler off(false);
    EXPECT_TRUE(off.unscale({p}));  // identity when disabled
}

// The check of all gradients is one fused kernel and one host read, however many parameters:
// on CUDA each host read is a device synchronisation.
TEST(LossScaler, OneHostReadPerStepForAnyNumberOfParameters) {
    DynamicLossScaler scaler(true, 256.0);
    std::vector<torch::Tensor> params;
    torch::Tensor loss = torch::zeros({});
    for (int i = 0; i < 40; ++i) {
        params.push_back(torch::full({3, 5}, 0.5 + i, torch::requires_grad()));
        loss = loss + (params.back() * params.back()).sum();
    }
    params.push_back(torch::ones({2}, torch::requires_grad()));  // no gradient: skipped
    scaler.scale_loss(loss).backward();
    const auto before = host_read_count();
    EXPECT_TRUE(scaler.unscale(params));
    EXPECT_EQ(host_read_count() - before, 1u);
    for (int i = 0; i < 40; ++i)  // d(x^2)/dx = 2x, exactly, after unscaling a power of two
        EXPECT_TRUE(torch::equal(params[i].grad(), params[i].detach() * 2)) << i;
    {
        torch::NoGradGuard g;
        params[17].mutable_grad()[1][2] = std::numeric_limits<float>::quiet_NaN();
    }
    const auto again = host_read_count();
    EXPECT_FALSE(scaler.unscale(params));
    EXPECT_EQ(host_read_count() - again, 1u);
    scaler.update(true);
    EXPECT_DOUBLE_EQ(scaler.scale(), 128.0);
}

TEST(GradClip, EqualsLibTorchsClipGradNormBitForBitWithoutAHostRead) {
    for (double max_norm : {0.5, 1e6}) {  // clipping, and a no-op
        torch::manual_seed(3);
        std::vector<torch::Tensor> a, b;
        for (int i = 0; i < 5; ++i) {
            a.push_back(torch::randn({4, 3}, torch::requires_grad()));
            b.push_back(a.back().detach().clone().requires_grad_());
            const auto g = torch::randn({4, 3}) * (i + 1);
            a.back().mutable_grad() = g.clone();
            b.back().mutable_grad() = g.clone();
        }
        const double want = torch::nn::utils::clip_grad_norm_(a, max_norm);
        const auto reads = host_read_count();
        const torch::Tensor norm = clip_grad_norm(b, max_norm);
        EXPECT_EQ(host_read_count(), reads);
        EXPECT_DOUBLE_EQ(norm.item<double>(), want);
        for (std::size_t i = 0; i < a.size(); ++i)
            EXPECT_TRUE(torch::equal(a[i].grad(), b[i].grad())) << max_norm << " " << i;
    }
}

TEST(Results, UltralyticsLayout) {
    ResultsTable t({"epoch", "time", "train/box_loss", "lr/pg0"});
    t.add_row({1, 12.5, 1.23456789, 0.01});
    const std::string csv = t.to_csv();
    EXPECT_EQ(csv.substr(0, csv.find('\n')),
              "                  epoch,                   time,         train/box_loss,            "
              "     lr/pg0");
    EXPECT_NE(csv.find("                      1,                   12.5,                 1.2346,"),
              std::string::npos);
    EXPECT_THROW(t.add_row({1, 2}), Error);
    ResultsTable copy(t.columns());
    copy.set_rows_json(t.rows_json());
    EXPECT_EQ(copy.to_csv(), csv);
}

TEST(RunFolder, NamesIncrementRatherThanOverwrite) {
    const auto base = test_support::scratch_dir("runs");
    EXPECT_EQ(claim_run_folder(base, "detect", "", "", false), base / "runs" / "detect" / "train");
    EXPECT_EQ(claim_run_folder(base, "detect", "", "", false), base / "runs" / "detect" / "train2");
    EXPECT_EQ(claim_run_folder(base, "detect", "", "", false), base / "runs" / "detect" / "train3");
    EXPECT_EQ(claim_run_folder(base, "detect", "", "exp", false), base / "runs" / "detect" / "exp");
    EXPECT_EQ(claim_run_folder(base, "detect", "", "exp", false),
              base / "runs" / "detect" / "exp2");
    EXPECT_EQ(claim_run_folder(base, "detect", "", "exp", true), base / "runs" / "detect" / "exp");
    EXPECT_EQ(claim_run_folder(base, "detect", "mine", "a", false), base / "mine" / "a");
    EXPECT_EQ(claim_run_folder(base, "detect", "", "训练", false),
              base / "runs" / "detect" / path_from_utf8("训练"));
    for (const char* bad : {"../x", "a/b", "..", "c:\\x"}) {
        try {
            claim_run_folder(base, "detect", "", bad, false);
            ADD_FAILURE() << bad;
        } catch (const InputError& e) {
            EXPECT_EQ(e.where(), "name");
        }
    }
    std::filesystem::remove_all(base);
}

TEST(Registry, ToyTaskByIdAndAliasAndUnknownNamesKnownOnes) {
    toy::ensure_registered();
    auto& reg = TaskRegistry::instance();
    ASSERT_NE(reg.find("toy.regression"), nullptr);
    EXPECT_EQ(reg.find("toy"), reg.find("toy.regression"));
    EXPECT_EQ(reg.get("toy").folder, "toy");
    try {
        reg.get("detect.yolox");
        ADD_FAILURE();
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("toy.regression"), std::string::npos);
    }
    EXPECT_THROW(
        reg.add({"toy.regression", "again", {}, "", [] { return std::unique_ptr<Task>(); }}),
        Error);
    const Json described = describe_tasks();
    // What the studio's About shows of the worker: the LibTorch and CUDA runtime it was built with.
    EXPECT_EQ(described["libtorch"], TORCH_VERSION);
    EXPECT_TRUE(std::regex_match(described["cuda_runtime"].get<std::string>(),
                                 std::regex(R"(\d+\.\d+|none)")))
        << described["cuda_runtime"];
    bool found = false;
    for (const auto& t : described["tasks"])
        if (t["task"] == "toy.regression") {
            found = true;
            bool has_epochs = false;
            for (const auto& o : t["options"])
                has_epochs |= o["name"] == "epochs";
            EXPECT_TRUE(has_epochs);
        }
    EXPECT_TRUE(found);
}

}  // namespace
}  // namespace crucible::engine
