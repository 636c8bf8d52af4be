// Training throughput of detect.yolo through the real trainer (loader, augmentation, model, loss,
// optimizer, EMA, checkpoints), against the reference figure for the same setup: Ultralytics 8.1
// (Python, Debian PyTorch 1.13 CPU) trains yolov8n at imgsz 320, batch 16, on 256 synthetic
// images at 0.79 s per iteration on this machine type (about 20 img/s).
//
// Runs `epochs` epochs (default 3) and reports the last one, so the first (warm-up: allocator,
// oneDNN kernel selection, RAM cache fill) is left out. Also times pure forward + backward of the
// same model on one batch, in this run, for the step / pure ratio and for the reference figure
// scaled to this machine's speed (shared machines differ from day to day by more than 20%).
//
//   bench_train_detect [train=256] [classes=4] [max_objects=6] [any detect.yolo option=value]
// The task options default to imgsz=320 batch=16 epochs=3 workers=2 cache=true val=false.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/data/synth/synth.h"
#include "core/engine/autocast.h"
#include "core/engine/device.h"
#include "core/engine/device_memory.h"
#include "core/engine/job.h"
#include "core/engine/step_profile.h"
#include "core/engine/threads.h"
#include "plugins/detect/model/yolo_model.h"
#include "plugins/detect/task/detect_schema.h"
#include "plugins/detect/task/detect_task.h"

namespace {

using namespace crucible;
namespace fs = std::filesystem;
constexpr double kReferenceSecondsPerIteration = 0.79;
// The reference's own model, pure forward + backward with channels-last tensors, on the machine
// where 0.79 s was measured. Set against our pure forward + backward of the same model in this
// run, it tells how fast this machine is now relative to that one (the same LibTorch ops run in
// both: measured back to back with Debian's PyTorch 1.13 on one machine, the two agree within
// noise).
constexpr double kReferencePureMilliseconds = 338.0;

double pure_forward_backward_ms(const std::string& model_name, int imgsz, int batch, int nc) {
    using namespace crucible::detect;
    DetectionModel model(DetectionModelOptions(yolo_scale_from_model_name(model_name), nc));
    model->train();
    model->set_memory_format(torch::MemoryFormat::ChannelsLast);
    auto images =
        torch::rand({batch, 3, imgsz, imgsz}).contiguous(torch::MemoryFormat::ChannelsLast);
    double best = 1e30;
    for (int it = 0; it < 4; ++it) {
        model->zero_grad();
        const auto t0 = std::chrono::steady_clock::now();
        auto levels = model->forward_levels(images);
        torch::Tensor sum = levels[0].sum() + levels[1].sum() + levels[2].sum();
        sum.backward();
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        if (it > 0) best = std::min(best, ms);
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    detect::ensure_detect_task_registered();
    // Dataset size is the benchmark's own; every other key=value is a task option.
    std::map<std::string, int> dataset = {{"train", 256}, {"classes", 4}, {"max_objects", 6}};
    std::vector<std::string> words;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto eq = arg.find('=');
        if (eq != std::string::npos && dataset.count(arg.substr(0, eq)))
            dataset[arg.substr(0, eq)] = std::stoi(arg.substr(eq + 1));
        else
            words.push_back(arg);
    }
    const auto schema = detect::detect_task_schema();
    Json options = schema.parse_key_values(words);
    const Json defaults = {{"imgsz", 320},  {"batch", 16},  {"epochs", 3},      {"workers", 2},
                           {"cache", true}, {"val", false}, {"log_steps", 1000}};
    for (const auto& [k, v] : defaults.items())
        if (!options.contains(k)) options[k] = v;
    Json probe = options;  // data= comes once the set is written
    probe["data"] = "unset";
    const Json config = schema.resolve(probe);
    const int imgsz = config["imgsz"].get<int>(), batch = config["batch"].get<int>();

    // Not a test_support::TempDir: the data set stays under $TMPDIR/crucible_bench_train_detect
    // after the run, where tests/gpu/run.sh and tests/bench/reference/compare.py (each with a
    // TMPDIR of its own) train the Python reference on the same images.
    const fs::path root = fs::temp_directory_path() / "crucible_bench_train_detect";
    data::SynthOptions so;
    so.train = dataset["train"];
    so.val = 16;
    so.classes = dataset["classes"];
    so.max_objects = dataset["max_objects"];
    so.imgsz = imgsz;
    so.seed = 7;
    options["data"] = path_to_utf8(data::write_synth_dataset(root / "data", so));
    const fs::path job = root / "job";
    fs::remove_all(job);
    fs::create_directories(job);
    write_json_file(job / "spec.json", Json{{"task", "detect.yolo"}, {"options", options}});
    engine::JobOptions jo;
    jo.console = false;
    jo.install_signals = false;
    const int code = engine::run_job(job, jo);
    if (code != 0) {
        std::fprintf(stderr, "training failed (exit %d); see %s\n", code,
                     path_to_utf8(job / "worker.log").c_str());
        return 1;
    }
    // The last epoch's phases, per step (the run was in this process).
    const engine::PhaseTotals& last = engine::StepProfile::current().last_epoch();
    const double steps = static_cast<double>(std::max(1LL, last.steps));
    // The step is the training phases. Validation, the weights file and the epoch-end checkpoint
    // come once per epoch and are shown apart, as the reference's epoch window (Ultralytics'
    // on_train_epoch_start to on_train_epoch_end) also ends before its validation and its
    // checkpoint save. The checkpoint writer's disk write runs behind the next epoch's steps and
    // so stays in them.
    double step_ms = 0, checkpoint_ms = 0;
    for (const auto& [name, seconds] : last.totals) {
        const double ms = 1000.0 * seconds / steps;
        if (name == "checkpoint") checkpoint_ms = ms;
        if (name == "val" || name == "weights" || name == "checkpoint") continue;
        step_ms += ms;
    }
    const int threads = engine::configure_cpu_threads(config["workers"].get<int>());
    const std::string model = config["model"].get<std::string>();
    const double img_s = batch / (step_ms / 1000.0);
    const auto device = engine::choose_device(config["device"].get<std::string>());
    // The trainer's rule (training_autocast): on the CPU only amp_dtype=bf16 turns amp on.
    const engine::AutocastMode autocast = engine::training_autocast(
        config["amp"].get<bool>(), config["amp_dtype"].get<std::string>(), device.device);
    const std::string amp = autocast.name();
    std::printf("detect.yolo %s imgsz %d batch %d, %d train images, %d CPU threads, %s%s\n",
                model.c_str(), imgsz, batch, so.train, threads, device.describe().c_str(),
                amp == "off" ? "" : (" AMP " + amp).c_str());
    std::printf("time per step in epoch %d: %s\n", config["epochs"].get<int>(),
                last.summary().c_str());
    Json result = {
        {"device", device.describe()}, {"imgsz", imgsz}, {"batch", batch},
        {"step_ms", step_ms},          {"img_s", img_s}, {"checkpoint_ms", checkpoint_ms},
        {"threads", threads},          {"amp", amp}};
    if (const auto memory = engine::device_memory(device.device)) {
        result["peak_reserved_gib"] = static_cast<double>(memory->peak_reserved) / (1u << 30);
        std::printf("step %.1f ms = %.1f img/s; peak GPU memory reserved %s\n", step_ms, img_s,
                    engine::format_gib(memory->peak_reserved).c_str());
        std::printf("RESULT %s\n", result.dump().c_str());
        return 0;
    }
    const double pure_ms = pure_forward_backward_ms(model, imgsz, batch, so.classes);
    const double ref_img_s = batch / kReferenceSecondsPerIteration;
    std::printf("step %.1f ms = %.1f img/s; reference %.0f ms = %.1f img/s; ratio %.2fx\n", step_ms,
                img_s, kReferenceSecondsPerIteration * 1000, ref_img_s, img_s / ref_img_s);
    std::printf("pure forward+backward %.1f ms; step / pure = %.2f (goal: at most about 1.2)\n",
                pure_ms, step_ms / pure_ms);
    // An estimate, not a measurement: assumes the reference's whole step scales with this
    // machine's speed as its forward + backward does. pure_ms is the fastest of three passes, so
    // the factor errs low, against us.
    const double machine_factor = pure_ms / kReferencePureMilliseconds;
    const double scaled_reference_ms = kReferenceSecondsPerIteration * 1000 * machine_factor;
    std::printf(
        "machine speed: pure forward+backward %.1f ms here vs %.0f ms where the reference "
        "was measured (x%.2f); reference step scaled to this machine %.0f ms; ratio %.2fx\n",
        pure_ms, kReferencePureMilliseconds, machine_factor, scaled_reference_ms,
        scaled_reference_ms / step_ms);
    std::printf("checkpoint: %.1f ms per step; with it, step %.1f ms = %.1f img/s\n", checkpoint_ms,
                step_ms + checkpoint_ms, batch / ((step_ms + checkpoint_ms) / 1000.0));
    result["pure_ms"] = pure_ms;
    std::printf("RESULT %s\n", result.dump().c_str());
    return 0;
}
