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

#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/data/synth/synth.h"
#include "core/engine/job.h"
#include "core/engine/safetensors_torch.h"
#include "plugins/detect/task/detect_task.h"
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

}  // namespace
}  // namespace crucible::detect
#endif
