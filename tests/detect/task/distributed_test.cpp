// [B2 6/8] The detector on 2 Gloo ranks (the real crucible-worker, device=cpu ranks=2) with
// sync_bn=true trains what one process trains with the same global batch: SyncBatchNorm gives
// every BatchNorm layer the whole batch's statistics, and each rank's loss weighs in by its
// share of the batch's target scores. "What one process trains" is measured against float
// noise: the same single-process run on 2 threads instead of 1 (other summation orders in the
// convolutions) ends up about 2e-4 away here. With per-rank BatchNorm (the default) the ranks
// end up far further away, which the test also shows.
#include <gtest/gtest.h>

#ifndef _WIN32  // the worker runs through the shell
#include <torch/torch.h>

#include <filesystem>
#include <thread>
#include <vector>

#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/data/dataset_io.h"
#include "core/data/synth/synth.h"
#include "core/engine/distributed.h"
#include "core/engine/fused_kernels.h"
#include "core/engine/job.h"
#include "core/engine/safetensors_torch.h"
#include "core/jobs/rank_launcher.h"
#include "plugins/detect/task/detect_task.h"
#include "plugins/detect/task/detection_validator.h"
#include "plugins/detect/task/model_source.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace crucible::detect {
namespace {

namespace fs = std::filesystem;

double max_difference(const fs::path& a, const fs::path& b) {
    const auto wa = engine::load_safetensors(a / "artifacts" / "weights" / "last.safetensors");
    const auto wb = engine::load_safetensors(b / "artifacts" / "weights" / "last.safetensors");
    EXPECT_EQ(wa.size(), wb.size());
    double worst = 0;
    for (const auto& [name, t] : wa) {
        if (!wb.count(name) || !t.is_floating_point()) continue;
        worst = std::max(worst, (t - wb.at(name)).abs().max().item<double>());
    }
    return worst;
}

void run_ranks(const fs::path& dir, const Json& options) {
    fs::create_directories(dir);
    write_json_file(dir / "spec.json", Json{{"task", "detect.yolo"}, {"options", options}});
    const auto r = test_support::run_command(test_support::shell_quote(CRUCIBLE_WORKER_EXE) +
                                             " --job " + test_support::shell_quote(dir) + " 2>&1");
    ASSERT_EQ(r.code, 0) << r.out << read_file_bytes(dir / "worker.log");
}

TEST(DetectDistributed, TwoRanksWithSyncBatchNormTrainWhatOneProcessTrains) {
    ensure_detect_task_registered();
    // SyncBatchNorm is LibTorch's batch norm and SiLU with global statistics, so the one-process
    // runs it is compared with take LibTorch's ops too, not the fused CPU kernels
    // (core/engine/fused_kernels.h), whose float rounding differs by more than thread-count noise.
    struct UnfusedHere {
        UnfusedHere() { engine::set_fused_cpu_kernels_enabled(false); }
        ~UnfusedHere() { engine::set_fused_cpu_kernels_enabled(true); }
    } unfused;
    const auto dir = test_support::scratch_dir("detect_ranks");
    fs::remove_all(dir);
    data::SynthOptions so;
    so.train = 16;
    so.val = 4;
    so.classes = 3;
    so.imgsz = 64;
    so.seed = 4;
    const auto yaml = data::write_synth_dataset(dir / "data", so);
    Json options = {{"data", path_to_utf8(yaml)},
                    {"model", "yolov8n.yaml"},
                    {"imgsz", 64},
                    {"epochs", 1},
                    {"batch", 8},
                    {"nbs", 8},
                    {"amp", false},
                    {"optimizer", "SGD"},
                    {"lr0", 0.02},
                    {"warmup_epochs", 0},
                    {"val", false},
                    {"ema", false},
                    {"checkpoint_steps", 0},
                    {"workers", 1},
                    {"loader_threads", 1},
                    {"seed", 3},
                    {"device", "cpu"},
                    {"sync_bn", true}};
    const auto run_here = [&](const char* name, const Json& o) {
        fs::create_directories(dir / name);
        write_json_file(dir / name / "spec.json", Json{{"task", "detect.yolo"}, {"options", o}});
        engine::JobOptions jo;
        jo.console = false;
        jo.install_signals = false;
        ASSERT_EQ(engine::run_job(dir / name, jo), 0) << read_file_bytes(dir / name / "worker.log");
    };
    run_here("one", options);
    Json two_threads = options;
    two_threads["workers"] = 2;
    run_here("threads", two_threads);

    options["ranks"] = 2;
    run_ranks(dir / "sync", options);
    options["sync_bn"] = false;
    run_ranks(dir / "own", options);

    const double noise = max_difference(dir / "one", dir / "threads");
    const double synced = max_difference(dir / "one", dir / "sync");
    const double own = max_difference(dir / "one", dir / "own");
    EXPECT_LT(synced, std::max(3 * noise, 1e-6)) << "float noise " << noise;
    EXPECT_GT(own, 30 * synced) << "per-rank BatchNorm is told apart";
    fs::remove_all(dir);
}

// Validation sharded over 3 ranks (threads of this process, Gloo on loopback) gives rank 0 the
// metrics one process computes, exactly: every image's boxes and predictions are gathered and
// matched in the split's order. 10 images in batches of 4 leave rank 0 an empty slice of the last
// batch. The fixture's YOLOv8n trained only 2 epochs: it finds next to nothing (mAP 0 here), so
// what the comparison rests on is every image, box and prediction arriving (counts, the confusion
// matrix of 300 predictions per image, the losses); a model that finds the shapes would take
// minutes to train here.
TEST(DetectDistributed, ShardedValidationGivesOneProcesssMetricsExactly) {
    const fs::path pt = fs::path(CRUCIBLE_FIXTURES_DIR) / "yolov8" / "yolov8n_shapes11.pt";
    ASSERT_TRUE(fs::exists(pt)) << pt;
    const auto dir = test_support::scratch_dir("detect_val_shards");
    fs::remove_all(dir);
    data::SynthOptions so;
    so.train = 1;
    so.val = 10;
    so.classes = 4;
    so.imgsz = 320;  // as the fixture model was trained
    so.seed = 5;
    const auto yaml = data::write_synth_dataset(dir / "data", so);
    const auto dataset = data::load_detection_dataset(yaml, data::DatasetFormat::Auto, {}).dataset;
    ValidatorOptions vo;
    vo.imgsz = 320;
    vo.confusion_conf = 0.001;  // every prediction NMS keeps goes into the confusion matrix
    vo.batch = 4;
    const auto run_rank = [&](int rank, int world, engine::Collective* collective) {
        ValidatorOptions o = vo;
        o.rank = rank;
        o.world_size = world;
        DetectionValidator validator(dataset, "val", o);
        auto model = load_for_inference(path_to_utf8(pt), torch::kCPU).model;
        return validator.run(*model, collective);
    };
    const ValidationResult one = run_rank(0, 1, nullptr);
    ASSERT_EQ(one.metrics.images, 10);
    std::int64_t predicted = 0;
    for (std::int64_t c : one.confusion.counts())
        predicted += c;
    ASSERT_GT(predicted, one.metrics.instances) << "predictions were counted";

    constexpr int kRanks = 3;
    const int port = jobs::free_tcp_port("127.0.0.1");
    std::vector<ValidationResult> results(kRanks);
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r)
        threads.emplace_back([&, r] {
            const RankAddress a{r, kRanks, std::string("127.0.0.1"), port, std::string("cpu")};
            auto collective = engine::Collective::connect(a, std::chrono::seconds(60));
            results[static_cast<std::size_t>(r)] = run_rank(r, kRanks, collective.get());
        });
    for (auto& t : threads)
        t.join();
    const ValidationResult& zero = results[0];
    EXPECT_EQ(zero.metrics.images, one.metrics.images);
    EXPECT_EQ(zero.metrics.instances, one.metrics.instances);
    EXPECT_EQ(zero.metrics.precision, one.metrics.precision);
    EXPECT_EQ(zero.metrics.recall, one.metrics.recall);
    EXPECT_EQ(zero.metrics.map50, one.metrics.map50);
    EXPECT_EQ(zero.metrics.map50_95, one.metrics.map50_95);
    EXPECT_EQ(zero.confusion.counts(), one.confusion.counts());
    for (std::size_t k = 0; k < 3; ++k) {
        // Each batch's loss: the ranks' sums over the batch's global target-score sum.
        EXPECT_NEAR(zero.losses[k], one.losses[k], 1e-5 * std::max(1.0, one.losses[k])) << k;
        EXPECT_EQ(results[1].losses[k], zero.losses[k]) << "every rank has the losses";
    }
    EXPECT_EQ(results[1].metrics.images, 0) << "only rank 0 holds the metrics";
    fs::remove_all(dir);
}

}  // namespace
}  // namespace crucible::detect
#endif
