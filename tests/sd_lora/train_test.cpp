// A whole `diffusion.sd_lora` run on CPU: tiny random base model (diffusers folder written by the
// test), 16 generated images of one coloured shape with a fixed caption. The validation loss
// falls, the kohya LoRA file and sample PNGs are written, and the LoRA loads back onto the base.
// With the text encoder's LoRA (own learning rate, gradient checkpointing, Euler samples): both
// sets of adapters train and are written, each parameter group at its own learning rate
// (lr/unet, lr/text_encoder), resuming stays exact, rendering samples during training leaves the
// trained adapters as they are, and a weight EMA runs beside learning rates of their own.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <opencv2/imgproc.hpp>

#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/safetensors.h"
#include "core/data/image_io.h"
#include "core/engine/checkpoint_file.h"
#include "core/engine/checkpoint_store.h"
#include "core/engine/job.h"
#include "core/engine/safetensors_torch.h"
#include "core/engine/stop_control.h"
#include "core/engine/trainer.h"
#include "plugins/sd_lora/checkpoint_io.h"
#include "plugins/sd_lora/lora.h"
#include "plugins/sd_lora/sd_task.h"
#include "tests/sd_lora/sd_test_util.h"
#include "tests/support/results_csv.h"
#include "tests/support/run_command.h"

namespace crucible::sd {
namespace {
namespace fs = std::filesystem;

// Expects two safetensors files to hold the same tensors (names and values); returns the names.
std::vector<std::string> expect_same_tensors(const fs::path& a_file, const fs::path& b_file) {
    const auto a = engine::load_safetensors(a_file), b = engine::load_safetensors(b_file);
    EXPECT_EQ(a.size(), b.size()) << path_to_utf8(a_file);
    std::vector<std::string> names;
    for (const auto& [name, t] : a) {
        const auto other = b.find(name);
        EXPECT_TRUE(other != b.end() && torch::equal(t, other->second))
            << path_to_utf8(a_file) << ": " << name;
        names.push_back(name);
    }
    return names;
}

void write_shapes(const fs::path& folder, int count) {
    fs::create_directories(folder);
    for (int i = 0; i < count; ++i) {
        cv::Mat img(32, 32, CV_8UC3, cv::Scalar(255, 255, 255));
        cv::circle(img, cv::Point(10 + (i * 7) % 12, 10 + (i * 11) % 12), 6 + i % 3,
                   cv::Scalar(30, 30, 220), cv::FILLED);
        data::write_image(folder / ("shape_" + std::to_string(i) + ".png"), img);
        std::ofstream(folder / ("shape_" + std::to_string(i) + ".txt")) << "red circle";
    }
}

std::vector<double> column(const fs::path& csv, const std::string& name) {
    return test_support::read_results_csv(csv).column(name);
}

TEST(SdLoraTask, TrainsATinyLoraOnCpu) {
    ensure_sd_lora_registered();
    const fs::path dir = testing::fresh_dir("train");
    testing::write_tiny_model_folder(dir / "model", 11);
    write_shapes(dir / "data", 16);
    const fs::path job = dir / "job";
    fs::create_directories(job);
    const Json options = {{"data", path_to_utf8(dir / "data")},
                          {"model", path_to_utf8(dir / "model")},
                          {"resolution", 32},
                          {"min_bucket_reso", 32},
                          {"max_bucket_reso", 64},
                          {"bucket_reso_steps", 32},
                          {"epochs", 5},
                          {"batch", 4},
                          {"nbs", 4},
                          {"lr0", 3e-3},
                          {"network_dim", 8},
                          {"network_alpha", 8},
                          {"sample_every_n_steps", 10},
                          {"sample_steps", 3},
                          {"checkpoint_steps", 0},
                          {"device", "cpu"},
                          {"workers", 1},
                          {"seed", 3}};
    write_json_file(job / "spec.json", Json{{"task", kSdLoraTaskId}, {"options", options}});
    engine::JobOptions o;
    o.console = false;
    o.install_signals = false;
    const int rc = engine::run_job(job, o);
    const auto events = read_event_log(job / "events.jsonl");
    ASSERT_EQ(rc, 0) << (events.empty() ? "" : events.back().fields.dump());

    const auto val = column(job / "results.csv", "val/loss");
    const auto train = column(job / "results.csv", "train/loss");
    ASSERT_EQ(val.size(), 5u);
    for (double v : val)
        EXPECT_TRUE(std::isfinite(v));
    for (double v : train)
        EXPECT_TRUE(std::isfinite(v));
    EXPECT_LT(val.back(), val.front() * 0.97) << val.front() << " -> " << val.back();

    // kohya LoRA with metadata and hash.
    const fs::path lora = job / "artifacts" / "lora" / "lora.safetensors";
    ASSERT_TRUE(fs::exists(lora));
    const auto file = SafetensorsFile::open(lora);
    EXPECT_EQ(file.size(), 72u * 3);
    EXPECT_EQ(file.metadata().at("ss_network_module"), "networks.lora");
    EXPECT_EQ(file.metadata().at("ss_network_dim"), "8");
    EXPECT_EQ(file.metadata().at("ss_num_train_images"), "16");
    EXPECT_EQ(file.metadata().at("sshs_model_hash"), safetensors_data_hash(read_file_bytes(lora)));
    EXPECT_NE(file.metadata().at("ss_tag_frequency").find("red circle"), std::string::npos);
    EXPECT_EQ(file.at("lora_unet_down_blocks_0_attentions_0_proj_in.lora_up.weight").dtype,
              SafetensorsDtype::F16);
    EXPECT_TRUE(fs::exists(job / "artifacts" / "lora" / "lora-best.safetensors"));

    // The trained LoRA is not zero and loads back onto the base model.
    SdModels base = load_sd_models(dir / "model");
    LoraNetwork net(unet_lora_targets(*base.unet), LoraOptions{8, 8, 0, false});
    net->load_kohya_state(engine::load_safetensors(file), file.where());
    double up = 0;
    for (const auto& a : net->adapters)
        up += a->weights.up.abs().sum().item<double>();
    EXPECT_GT(up, 0);

    // Samples: every 10 batches (20 batches in all) and at the end.
    for (const char* name : {"step10_0.png", "step20_0.png", "final_0.png"}) {
        const fs::path png = job / "artifacts" / "samples" / name;
        ASSERT_TRUE(fs::exists(png)) << name;
        const cv::Mat img = data::read_image(png);
        EXPECT_EQ(img.cols, 32);
        EXPECT_EQ(img.rows, 32);
    }
    // Each sample image is announced: an `artifact` event and a `sample` event with its prompt.
    std::set<std::string> artifacts, sampled;
    for (const auto& e : read_event_log(job / "events.jsonl")) {
        if (e.kind == event_kind::kArtifact && e.fields.value("type", std::string()) == "image")
            artifacts.insert(e.fields.value("name", std::string()));
        if (e.kind == event_kind::kSample) sampled.insert(e.fields.value("image", std::string()));
    }
    for (const char* name :
         {"samples/step10_0.png", "samples/step20_0.png", "samples/final_0.png"}) {
        EXPECT_TRUE(artifacts.count(name)) << name;
        EXPECT_TRUE(sampled.count(name)) << name;
    }
    // Latents were cached to disk (one per image).
    std::size_t cached = 0;
    for (const auto& e : fs::directory_iterator(job / "latent_cache"))
        cached += e.path().extension() == ".safetensors" ? 1 : 0;
    EXPECT_EQ(cached, 16u);
    fs::remove_all(dir);
}

int run(const fs::path& job, const Json& options, bool resume) {
    fs::create_directories(job);
    write_json_file(job / "spec.json", Json{{"task", kSdLoraTaskId}, {"options", options}});
    engine::JobOptions o;
    o.console = false;
    o.install_signals = false;
    o.resume = resume;
    return engine::run_job(job, o);
}

// Two epochs of batch 4 with flips and shuffled captions (what a resume or a rank must draw
// exactly as one uninterrupted process does), no dropout.
Json flips_and_shuffled_captions(const fs::path& dir) {
    return {{"data", path_to_utf8(dir / "data")},
            {"model", path_to_utf8(dir / "model")},
            {"resolution", 32},
            {"min_bucket_reso", 32},
            {"max_bucket_reso", 64},
            {"bucket_reso_steps", 32},
            {"epochs", 2},
            {"batch", 4},
            {"nbs", 4},
            {"lr0", 1e-3},
            {"network_dim", 4},
            {"network_alpha", 4},
            {"network_dropout", 0.0},
            {"flip_aug", true},
            {"shuffle_caption", true},
            {"checkpoint_steps", 0},
            {"device", "cpu"},
            {"workers", 1},
            {"seed", 8}};
}

TEST(SdLoraTask, ExtendingAFinishedRunEqualsTheLongerRun) {
    ensure_sd_lora_registered();
    const fs::path dir = testing::fresh_dir("resume");
    testing::write_tiny_model_folder(dir / "model", 5);
    write_shapes(dir / "data", 8);
    Json options = flips_and_shuffled_captions(dir);
    ASSERT_EQ(run(dir / "whole", options, false), 0);
    options["epochs"] = 1;
    ASSERT_EQ(run(dir / "split", options, false), 0);
    options["epochs"] = 2;
    ASSERT_EQ(run(dir / "split", options, true), 0);
    const auto names =
        expect_same_tensors(dir / "whole" / "artifacts" / "weights" / "last.safetensors",
                            dir / "split" / "artifacts" / "weights" / "last.safetensors");
    ASSERT_FALSE(names.empty());
    fs::remove_all(dir);
}

#ifndef _WIN32  // the worker runs through the shell
// [B2 6/8]: two Gloo ranks (crucible-worker, device=cpu ranks=2) with global batch 4 train the
// LoRA one process trains with batch 4: flips, shuffled captions, the posterior sample, noise and
// timesteps are drawn for the global batch and each rank keeps its rows.
TEST(SdLoraTask, TwoRanksTrainTheLoraOneProcessTrains) {
    ensure_sd_lora_registered();
    const fs::path dir = testing::fresh_dir("ranks");
    testing::write_tiny_model_folder(dir / "model", 5);
    write_shapes(dir / "data", 8);
    Json options = flips_and_shuffled_captions(dir);
    ASSERT_EQ(run(dir / "one", options, false), 0);
    options["ranks"] = 2;
    fs::create_directories(dir / "two");
    write_json_file(dir / "two" / "spec.json", Json{{"task", kSdLoraTaskId}, {"options", options}});
    const auto two =
        test_support::run_command(test_support::shell_quote(CRUCIBLE_WORKER_EXE) + " --job " +
                                  test_support::shell_quote(dir / "two") + " 2>&1");
    ASSERT_EQ(two.code, 0) << two.out << read_file_bytes(dir / "two" / "worker.log");
    const auto a =
        engine::load_safetensors(dir / "one" / "artifacts" / "weights" / "last.safetensors");
    const auto b =
        engine::load_safetensors(dir / "two" / "artifacts" / "weights" / "last.safetensors");
    ASSERT_EQ(a.size(), b.size());
    double worst = 0;
    for (const auto& [name, t] : a) {
        ASSERT_TRUE(b.count(name)) << name;
        worst = std::max(
            worst,
            (t.to(torch::kFloat64) - b.at(name).to(torch::kFloat64)).abs().max().item<double>());
    }
    EXPECT_LT(worst, 1e-5);
    fs::remove_all(dir);
}
#endif

Json text_encoder_options(const fs::path& dir) {
    Json o = flips_and_shuffled_captions(dir);
    o.erase("flip_aug");
    o["train_text_encoder"] = true;
    o["text_encoder_lr"] = 2.5e-4;
    o["network_dropout"] = 0.1;
    o["caption_dropout_rate"] = 0.25;
    o["seed"] = 6;
    return o;
}

void write_tagged_shapes(const fs::path& folder, int count) {
    write_shapes(folder, count);
    for (int i = 0; i < count; ++i)
        std::ofstream(folder / ("shape_" + std::to_string(i) + ".txt"))
            << (i % 2 ? "red, circle, square" : "red, circle");
}

TEST(SdLoraTask, TrainsTheTextEncoderLoraWithItsOwnLearningRate) {
    ensure_sd_lora_registered();
    const fs::path dir = testing::fresh_dir("train_te");
    testing::write_tiny_model_folder(dir / "model", 13);
    write_tagged_shapes(dir / "data", 8);
    Json options = text_encoder_options(dir);
    options["gradient_checkpointing"] = true;
    options["lora_format"] = "both";
    options["sample_sampler"] = "euler";
    options["sample_steps"] = 3;
    const fs::path job = dir / "job";
    const int rc = run(job, options, false);
    const auto events = read_event_log(job / "events.jsonl");
    ASSERT_EQ(rc, 0) << (events.empty() ? "" : events.back().fields.dump());

    const fs::path lora = job / "artifacts" / "lora" / "lora.safetensors";
    const auto file = SafetensorsFile::open(lora);
    std::size_t te = 0, unet = 0;
    for (const auto& t : file.tensors()) {
        te += t.name.rfind("lora_te_", 0) == 0 ? 1 : 0;
        unet += t.name.rfind("lora_unet_", 0) == 0 ? 1 : 0;
    }
    EXPECT_EQ(unet, 72u * 3);
    EXPECT_EQ(te, 12u * 3);  // tiny CLIP: 2 layers × q/k/v/out_proj, fc1, fc2
    const std::string q = "lora_te_text_model_encoder_layers_0_self_attn_q_proj";
    EXPECT_EQ(file.at(q + ".lora_down.weight").shape, (std::vector<std::int64_t>{4, 32}));
    EXPECT_EQ(file.at(q + ".lora_up.weight").shape, (std::vector<std::int64_t>{32, 4}));
    EXPECT_EQ(file.at("lora_te_text_model_encoder_layers_1_mlp_fc2.lora_down.weight").shape,
              (std::vector<std::int64_t>{4, 37}));
    EXPECT_EQ(file.at(q + ".alpha").shape, (std::vector<std::int64_t>{}));
    EXPECT_EQ(file.metadata().at("ss_network_module"), "networks.lora");
    EXPECT_EQ(file.metadata().at("ss_text_encoder_lr"), "0.00025");
    EXPECT_EQ(file.metadata().at("ss_unet_lr"), "0.001");
    EXPECT_EQ(file.metadata().at("ss_learning_rate"), "0.001");
    EXPECT_EQ(file.metadata().at("ss_network_train_unet_only"), "False");

    // Every text-encoder adapter received gradients and moved: B starts at zero.
    const auto tensors = engine::load_safetensors(file);
    for (const auto& [name, t] : tensors) {
        if (name.rfind("lora_te_", 0) == 0 && name.find(".lora_up.") != std::string::npos) {
            EXPECT_GT(t.to(torch::kFloat32).abs().max().item<double>(), 0) << name;
        }
    }

    // PEFT: the UNet's adapter and the text encoder's in its text_encoder/ subfolder.
    const fs::path peft = job / "artifacts" / "lora" / "lora-peft";
    EXPECT_EQ(SafetensorsFile::open(peft / "adapter_model.safetensors").size(), 72u * 2);
    const auto te_peft = SafetensorsFile::open(peft / "text_encoder" / "adapter_model.safetensors");
    EXPECT_EQ(te_peft.size(), 12u * 2);
    EXPECT_NE(te_peft.find("base_model.model.text_model.encoder.layers.1.mlp.fc1.lora_B.weight"),
              nullptr);
    EXPECT_TRUE(fs::exists(job / "artifacts" / "samples" / "final_0.png"));
    fs::remove_all(dir);
}

TEST(SdLoraTask, PausedAndExtendedTextEncoderRunEqualsTheLongerRun) {
    ensure_sd_lora_registered();
    const fs::path dir = testing::fresh_dir("resume_te");
    testing::write_tiny_model_folder(dir / "model", 5);
    write_tagged_shapes(dir / "data", 8);
    Json options = text_encoder_options(dir);
    ASSERT_EQ(run(dir / "whole", options, false), 0);
    // The split run pauses after its first step, finishes its one epoch, and is extended.
    options["epochs"] = 1;
    fs::create_directories(dir / "split");
    write_stop_request(JobFolder{dir / "split"}, StopRequest::Pause);
    EXPECT_EQ(run(dir / "split", options, false), worker_exit_code(JobState::Paused));
    const auto events = read_event_log(dir / "split" / "events.jsonl");
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back().fields.value("state", std::string()), "paused");
    EXPECT_EQ(events.back().fields.value("step", 0), 1);
    ASSERT_EQ(run(dir / "split", options, true), 0);
    options["epochs"] = 2;
    ASSERT_EQ(run(dir / "split", options, true), 0);
    std::size_t te = 0;
    for (const auto& name :
         expect_same_tensors(dir / "whole" / "artifacts" / "weights" / "last.safetensors",
                             dir / "split" / "artifacts" / "weights" / "last.safetensors"))
        te += name.rfind("lora_te_", 0) == 0 ? 1 : 0;
    EXPECT_EQ(te, 12u * 2);
    fs::remove_all(dir);
}

// Sample images rendered during training (UNet and text encoder at learning rates other than the
// run's) leave the trained adapters exactly as a run without them; each group ran at its rate.
TEST(SdLoraTask, SamplingDuringTrainingDoesNotChangeTheTrainedAdapters) {
    ensure_sd_lora_registered();
    const fs::path dir = testing::fresh_dir("sample_te");
    testing::write_tiny_model_folder(dir / "model", 5);
    write_tagged_shapes(dir / "data", 8);
    Json options = text_encoder_options(dir);
    options["unet_lr"] = 2e-3;
    options["sample_steps"] = 1;
    ASSERT_EQ(run(dir / "plain", options, false), 0);
    options["sample_every_n_steps"] = 1;
    ASSERT_EQ(run(dir / "sampled", options, false), 0);
    for (const char* name : {"step1_0.png", "step3_0.png"})
        EXPECT_TRUE(fs::exists(dir / "sampled" / "artifacts" / "samples" / name)) << name;
    EXPECT_FALSE(expect_same_tensors(dir / "plain" / "artifacts" / "weights" / "last.safetensors",
                                     dir / "sampled" / "artifacts" / "weights" / "last.safetensors")
                     .empty());
    // lr0 1e-3, unet_lr 2e-3, text_encoder_lr 2.5e-4, lrf 1: constant rates of their own.
    const fs::path csv = dir / "plain" / "results.csv";
    EXPECT_EQ(column(csv, "lr/unet"), (std::vector<double>{2e-3, 2e-3}));
    EXPECT_EQ(column(csv, "lr/text_encoder"), (std::vector<double>{2.5e-4, 2.5e-4}));
    EXPECT_EQ(test_support::read_results_csv(csv).column_index("lr/pg0"), -1);
    for (const char* file : {"lora.safetensors", "lora-best.safetensors"})
        expect_same_tensors(dir / "plain" / "artifacts" / "lora" / file,
                            dir / "sampled" / "artifacts" / "lora" / file);
    fs::remove_all(dir);
}

// A weight EMA (refused while the learning rates were faked by rescaling each step) runs with
// unet_lr and text_encoder_lr of their own: the checkpoint keeps the EMA beside the model.
TEST(SdLoraTask, EmaRunsWithLearningRatesOfTheirOwn) {
    ensure_sd_lora_registered();
    const fs::path dir = testing::fresh_dir("ema_te");
    testing::write_tiny_model_folder(dir / "model", 5);
    write_tagged_shapes(dir / "data", 8);
    Json options = text_encoder_options(dir);
    options["unet_lr"] = 2e-3;
    options["ema"] = true;
    options["epochs"] = 1;
    const fs::path job = dir / "job";
    const int rc = run(job, options, false);
    const auto events = read_event_log(job / "events.jsonl");
    ASSERT_EQ(rc, 0) << (events.empty() ? "" : events.back().fields.dump());
    bool saw_rates = false;
    for (const auto& e : events) {
        if (e.kind != event_kind::kMetric) continue;
        const Json& v = e.fields.at("values");
        EXPECT_DOUBLE_EQ(v.at("lr/unet").get<double>(), 2e-3);
        EXPECT_DOUBLE_EQ(v.at("lr/text_encoder").get<double>(), 2.5e-4);
        saw_rates = true;
    }
    EXPECT_TRUE(saw_rates);
    const auto newest = engine::CheckpointStore(job / "checkpoints", 3).step_files();
    ASSERT_FALSE(newest.empty());
    const auto checkpoint = engine::read_checkpoint_file(newest.front());
    EXPECT_EQ(checkpoint.meta.at("ema_updates"), 2);  // 8 images, batch 4, nbs 4
    EXPECT_EQ(checkpoint.meta.at("param_groups"), Json::array({"unet", "text_encoder"}));
    ASSERT_TRUE(checkpoint.blobs.count("ema"));
    EXPECT_NE(checkpoint.blobs.at("ema"), checkpoint.blobs.at("model"));  // the EMA lags
    EXPECT_TRUE(fs::exists(job / "artifacts" / "lora" / "lora.safetensors"));
    fs::remove_all(dir);
}

// SDXL: the same task on an SDXL-structured tiny model, both text encoders' LoRA training with
// their own learning rate: the loss falls, the kohya file has kohya's SDXL keys (lora_unet_ in the
// original block numbering, lora_te1_, lora_te2_) and metadata, the PEFT folders are one per
// model, the LoRA loads back onto the base, and the samples render.
TEST(SdLoraTask, TrainsATinySdxlLoraWithBothTextEncoders) {
    ensure_sd_lora_registered();
    const fs::path dir = testing::fresh_dir("train_sdxl");
    testing::write_tiny_sdxl_model_folder(dir / "model", 21);
    write_shapes(dir / "data", 16);
    Json options = {{"data", path_to_utf8(dir / "data")},
                    {"model", path_to_utf8(dir / "model")},
                    {"resolution", 32},
                    {"min_bucket_reso", 32},
                    {"max_bucket_reso", 64},
                    {"bucket_reso_steps", 32},
                    {"epochs", 5},
                    {"batch", 4},
                    {"nbs", 4},
                    {"lr0", 3e-2},
                    {"text_encoder_lr", 1e-3},
                    {"train_text_encoder", true},
                    {"flip_aug", true},
                    {"lora_format", "both"},
                    {"network_dim", 8},
                    {"network_alpha", 8},
                    {"sample_steps", 2},
                    {"checkpoint_steps", 0},
                    {"device", "cpu"},
                    {"workers", 1},
                    {"seed", 5}};
    const fs::path job = dir / "job";
    ASSERT_EQ(run(job, options, false), 0);
    const auto val = column(job / "results.csv", "val/loss");
    ASSERT_EQ(val.size(), 5u);
    EXPECT_LT(val.back(), val.front() * 0.97) << val.front() << " -> " << val.back();
    std::cout << "sdxl val/loss fp32 base:";
    for (double v : val)
        std::cout << " " << v;
    std::cout << "\n";

    const fs::path lora = job / "artifacts" / "lora" / "lora.safetensors";
    const auto file = SafetensorsFile::open(lora);
    EXPECT_EQ(file.metadata().at("ss_base_model_version"), "sdxl_base_v1-0");
    EXPECT_EQ(file.metadata().at("modelspec.architecture"), "stable-diffusion-xl-v1-base/lora");
    std::size_t unet = 0, te1 = 0, te2 = 0;
    for (const auto& t : file.tensors()) {
        unet += t.name.rfind("lora_unet_", 0) == 0 ? 1 : 0;
        te1 += t.name.rfind("lora_te1_", 0) == 0 ? 1 : 0;
        te2 += t.name.rfind("lora_te2_", 0) == 0 ? 1 : 0;
    }
    EXPECT_EQ(te1, 2u * 6 * 3);  // 2 layers x 6 projections x (down, up, alpha)
    EXPECT_EQ(te2, 2u * 6 * 3);
    EXPECT_EQ(unet + te1 + te2, file.size());
    EXPECT_TRUE(
        file.find("lora_unet_input_blocks_4_1_transformer_blocks_1_attn2_to_k.lora_down.weight"))
        << "kohya's SDXL numbering";
    EXPECT_TRUE(file.find("lora_unet_middle_block_1_proj_in.alpha"));
    for (const char* folder : {"lora-peft", "lora-peft/text_encoder", "lora-peft/text_encoder_2"})
        EXPECT_TRUE(fs::exists(job / "artifacts" / "lora" / folder / "adapter_model.safetensors"))
            << folder;

    // It loads back onto the base, and both encoders' adapters trained.
    SdModels base = load_sd_models(dir / "model");
    std::vector<LoraTarget> targets = unet_lora_targets(*base.unet);
    const auto first = text_encoder_lora_targets(*base.text_encoder, "lora_te1");
    const auto second = text_encoder_lora_targets(*base.text_encoder_2, "lora_te2");
    targets.insert(targets.end(), first.begin(), first.end());
    targets.insert(targets.end(), second.begin(), second.end());
    LoraNetwork net(targets, LoraOptions{8, 8, 0, false});
    net->load_kohya_state(engine::load_safetensors(file), file.where());
    double te2_up = 0;
    for (std::size_t i = 0; i < net->targets.size(); ++i)
        if (net->targets[i].kohya.rfind("lora_te2_", 0) == 0)
            te2_up += net->adapters[i]->weights.up.abs().sum().item<double>();
    EXPECT_GT(te2_up, 0);
    EXPECT_TRUE(fs::exists(job / "artifacts" / "samples" / "final_0.png"));

    // The frozen base in bf16 (as SDXL on a 24 GB card needs): it trains, the LoRA stays fp32.
    options["base_precision"] = "bf16";
    options["lora_format"] = "kohya";
    ASSERT_EQ(run(dir / "job_bf16", options, false), 0);
    const auto val16 = column(dir / "job_bf16" / "results.csv", "val/loss");
    ASSERT_EQ(val16.size(), val.size());
    std::cout << "sdxl val/loss bf16 base:";
    for (double v : val16)
        std::cout << " " << v;
    std::cout << "\n";
    // bf16 rounding moves the trajectory (lr 3e-2); it must stay near and learn as much.
    for (std::size_t i = 0; i < val.size(); ++i)
        EXPECT_NEAR(val16[i], val[i], 0.05 * val[i]) << "epoch " << i << ": bf16 vs fp32 base";
    EXPECT_LT(val16.back(), val16.front() * 0.97) << val16.front() << " -> " << val16.back();
    EXPECT_TRUE(fs::exists(dir / "job_bf16" / "artifacts" / "samples" / "final_0.png"));

    // Without tokenizer_2/ (single files have none) the second encoder reads the first
    // tokenizer's ids padded with "!", as SDXL's tokenizer_2 pads: the same run.
    fs::remove_all(dir / "model" / "tokenizer_2");
    options["base_precision"] = "fp32";
    ASSERT_EQ(run(dir / "job_one_tokenizer", options, false), 0);
    const auto val_one = column(dir / "job_one_tokenizer" / "results.csv", "val/loss");
    ASSERT_EQ(val_one.size(), val.size());
    EXPECT_DOUBLE_EQ(val_one.back(), val.back());
    bool said = false;
    for (const auto& e : read_event_log(dir / "job_one_tokenizer" / "events.jsonl"))
        said = said || e.fields.dump().find("padded with '!'") != std::string::npos;
    EXPECT_TRUE(said);

    // clip_skip has no meaning for SDXL: refused, naming the option.
    options["clip_skip"] = 2;
    EXPECT_NE(run(dir / "job_skip", options, false), 0);
    const auto events = read_event_log(dir / "job_skip" / "events.jsonl");
    ASSERT_FALSE(events.empty());
    EXPECT_NE(events.back().fields.dump().find("clip_skip"), std::string::npos)
        << events.back().fields.dump();
    fs::remove_all(dir);
}

TEST(SdLoraTask, MissingDataOrModelIsAClearFailure) {
    ensure_sd_lora_registered();
    const fs::path dir = testing::fresh_dir("train_bad");
    const fs::path job = dir / "job";
    fs::create_directories(job);
    write_json_file(job / "spec.json", Json{{"task", kSdLoraTaskId},
                                            {"options",
                                             {{"data", path_to_utf8(dir / "nope")},
                                              {"model", path_to_utf8(dir / "nomodel")},
                                              {"device", "cpu"}}}});
    engine::JobOptions o;
    o.console = false;
    o.install_signals = false;
    EXPECT_NE(engine::run_job(job, o), 0);
    const auto events = read_event_log(job / "events.jsonl");
    ASSERT_FALSE(events.empty());
    EXPECT_NE(events.back().fields.dump().find("nope"), std::string::npos)
        << events.back().fields.dump();
}

}  // namespace
}  // namespace crucible::sd
