// Trains yolov8n from scratch on a small synthetic set through the same job path as
// crucible-worker, and checks that it learns.
//
// Recipe: `crucible dataset synth` data (seed 7), 2 shape classes (circle, rectangle), 96 train /
// 16 val images at 128 px, at most 2 objects per image; batch 8, 30 epochs (360 steps), AdamW as
// optimizer=auto picks it, mosaic for the first 20 epochs, one CPU thread (ctest may run another
// test beside this one on a 2-core machine). About a minute on an idle 2-core machine.
//
// Why the thresholds: an untrained (or broken: wrong assigner targets, box decoding or parameter
// groups) detector scores mAP50 = 0 here — chance for box detection is ~0, since a guessed box
// almost never reaches IoU 0.5 — and its validation box loss stays near its first value (6.87).
// This recipe is short and small: at 128 px from scratch a YOLOv8n spends its first 9-14 epochs
// at mAP 0, and where it ends depends on the seed and on float rounding. Over training seeds 0-2
// with 1 and 2 threads, the best mAP50 of an epoch measured 0.069-0.218 (the last five epochs'
// best went as low as 0.022, so the test no longer asks for that), and the last validation box
// loss 0.37-0.45 of the first. The test asks for >= 0.03 and < 0.6 of the first, and for the first
// epoch to be at chance. The long check (tests/detect/task/train_synth_40.sh, 320 px, 40 epochs)
// is where the figure is compared with the reference's.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/data/synth/synth.h"
#include "core/engine/job.h"
#include "core/engine/weights_file.h"
#include "plugins/detect/task/detect_task.h"
#include "plugins/detect/task/model_source.h"
#include "tests/support/results_csv.h"
#include "tests/support/temp_dir.h"

namespace crucible::detect {
namespace {

namespace fs = std::filesystem;

TEST(TrainDetect, Yolov8nLearnsSyntheticShapes) {
    ensure_detect_task_registered();
    const auto root = test_support::scratch_dir("train_detect");
    data::SynthOptions so;
    so.train = 96;
    so.val = 16;
    so.classes = 2;
    so.imgsz = 128;
    so.max_objects = 2;
    so.seed = 7;
    const auto yaml = data::write_synth_dataset(root / "data", so);

    const auto job = root / "job";
    fs::create_directories(job);
    Json options = {
        {"data", path_to_utf8(yaml)}, {"model", "yolov8n"}, {"imgsz", 128}, {"epochs", 30},
        {"close_mosaic", 10},         {"batch", 8},         {"seed", 0},    {"workers", 1},
        {"checkpoint_steps", 0},      {"log_steps", 100}};
    write_json_file(job / "spec.json", Json{{"task", "detect.yolo"}, {"options", options}});
    engine::JobOptions jo;
    jo.console = false;
    jo.install_signals = false;
    ASSERT_EQ(engine::run_job(job, jo), 0) << read_file_bytes(job / "worker.log");

    const auto csv = test_support::read_results_csv(job / "results.csv");
    ASSERT_EQ(csv.rows.size(), 30u);
    const std::vector<std::string> expected_header = {"epoch",
                                                      "time",
                                                      "train/box_loss",
                                                      "train/cls_loss",
                                                      "train/dfl_loss",
                                                      "metrics/precision(B)",
                                                      "metrics/recall(B)",
                                                      "metrics/mAP50(B)",
                                                      "metrics/mAP50-95(B)",
                                                      "val/box_loss",
                                                      "val/cls_loss",
                                                      "val/dfl_loss",
                                                      "lr/pg0",
                                                      "lr/pg1",
                                                      "lr/pg2"};
    EXPECT_EQ(csv.header, expected_header);
    const std::size_t last = csv.rows.size() - 1;
    const double first_map = csv.at(0, "metrics/mAP50(B)");
    double best_map = 0;
    for (std::size_t r = 0; r < csv.rows.size(); ++r)
        best_map = std::max(best_map, csv.at(r, "metrics/mAP50(B)"));
    const double val_box_ratio = csv.at(last, "val/box_loss") / csv.at(0, "val/box_loss");
    std::printf(
        "mAP50: epoch 1 %.4f, best epoch %.4f, last %.4f; last mAP50-95 %.4f; val box "
        "loss last/first %.3f\n",
        first_map, best_map, csv.at(last, "metrics/mAP50(B)"), csv.at(last, "metrics/mAP50-95(B)"),
        val_box_ratio);
    EXPECT_LT(first_map, 0.01);
    EXPECT_GE(best_map, 0.03);
    EXPECT_LT(val_box_ratio, 0.6);
    EXPECT_LT(csv.at(last, "train/box_loss"), csv.at(0, "train/box_loss"));

    // Events: eval rows per class, and the run ended as finished.
    const auto events = read_event_log(job / "events.jsonl");
    int evals = 0;
    std::string last_state;
    for (const auto& e : events) {
        if (e.kind == "eval") {
            ++evals;
            ASSERT_TRUE(e.fields.contains("per_class"));
            EXPECT_EQ(e.fields["per_class"].size(), 2u);
        }
        if (e.kind == "status") last_state = e.fields.value("state", "");
    }
    EXPECT_EQ(evals, 30);
    EXPECT_EQ(last_state, "succeeded");

    // Weights reload as a model source (scale and names from the metadata), metrics artifact.
    const auto best = job / "artifacts" / "weights" / "best.safetensors";
    const auto loaded = load_detection_model(path_to_utf8(best), std::nullopt);
    EXPECT_EQ(loaded.names, (std::vector<std::string>{"circle", "rectangle"}));
    const Json metrics = read_json_file(job / "artifacts" / "val_metrics.json");
    EXPECT_TRUE(metrics.contains("confusion_matrix"));
    // The best epoch by fitness (mostly mAP50-95), so not always the best mAP50's.
    EXPECT_GE(metrics["metrics/mAP50(B)"].get<double>(), 0.02);

    // Validation images with the best model's boxes, each announced as a sample whose image
    // names a file that exists under artifacts/.
    int samples = 0;
    for (const auto& e : events) {
        if (e.kind != "sample") continue;
        ++samples;
        const std::string image = e.fields.value("image", "");
        EXPECT_EQ(image.rfind("val_predictions/", 0), 0u) << image;
        EXPECT_TRUE(std::filesystem::is_regular_file(job / "artifacts" / image)) << image;
    }
    int files = 0;
    for (const auto& f : std::filesystem::directory_iterator(job / "artifacts" / "val_predictions"))
        files += f.path().extension() == ".jpg";
    EXPECT_GT(files, 0);
    EXPECT_LE(files, 8);
    EXPECT_EQ(samples, files);
}

}  // namespace
}  // namespace crucible::detect
