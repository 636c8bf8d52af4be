// Training throughput of detect.yolo through the real trainer (loader, augmentation, model, loss,
// optimizer, EMA, checkpoints), against the reference figure for the same setup: Ultralytics 8.1
// (Python, Debian PyTorch 1.13 CPU) trains yolov8n at imgsz 320, batch 16, on 256 synthetic
// images at 0.79 s per iteration on this machine type (about 20 img/s).
//
// Runs `epochs` epochs (default 3) and reports the last one, so the first (warm-up: allocator,
// oneDNN kernel selection, RAM cache fill) is left out. Also times pure forward + backward of the
// same model on one batch, in this run, for the step / pure ratio.
//
//   bench_train_detect [imgsz=320] [batch=16] [train=256] [epochs=3] [workers=2]
//                      [loader_threads=0] [cache=true] [model=yolov8n] [device=cpu]
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/data/synth/synth.h"
#include "core/engine/job.h"
#include "core/engine/threads.h"
#include "plugins/detect/model/yolo_model.h"
#include "plugins/detect/task/detect_task.h"

namespace {

using namespace crucible;
namespace fs = std::filesystem;
constexpr double kReferenceSecondsPerIteration = 0.79;

std::map<std::string, std::string> parse_args(int argc, char** argv) {
    std::map<std::string, std::string> out = {
        {"imgsz", "320"},  {"batch", "16"},         {"train", "256"},  {"epochs", "3"},
        {"workers", "2"},  {"loader_threads", "0"}, {"cache", "true"}, {"model", "yolov8n"},
        {"device", "cpu"}, {"val", "false"},        {"classes", "4"}};
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto eq = a.find('=');
        if (eq != std::string::npos) out[a.substr(0, eq)] = a.substr(eq + 1);
    }
    return out;
}

// The "time per step (epoch N): data 1.0 ms, forward ..." line of the last epoch, as phases.
std::vector<std::pair<std::string, double>> last_profile(const fs::path& events, int epoch) {
    // From the log events in events.jsonl (worker.log is flushed only when the logger closes).
    std::string found;
    const std::string key = "time per step (epoch " + std::to_string(epoch) + "): ";
    for (const auto& e : read_event_log(events))
        if (e.kind == "log") {
            const std::string line = e.fields.value("message", "");
            if (auto p = line.find(key); p != std::string::npos)
                found = line.substr(p + key.size());
        }
    std::vector<std::pair<std::string, double>> out;
    // "name 12.3 ms" items separated by ", "
    found += ", ";
    std::size_t pos = 0;
    while (pos < found.size()) {
        auto end = found.find(", ", pos);
        if (end == std::string::npos) end = found.size();
        const std::string item = found.substr(pos, end - pos);
        const auto sp = item.rfind(' ', item.size() - 4);
        if (sp != std::string::npos)
            out.emplace_back(item.substr(0, sp), std::stod(item.substr(sp + 1)));
        pos = end + 2;
    }
    return out;
}

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
    auto a = parse_args(argc, argv);
    detect::ensure_detect_task_registered();
    const int imgsz = std::stoi(a["imgsz"]), batch = std::stoi(a["batch"]);
    const int epochs = std::stoi(a["epochs"]), train = std::stoi(a["train"]);
    const fs::path root = fs::temp_directory_path() / "crucible_bench_train_detect";
    data::SynthOptions so;
    so.train = train;
    so.val = 16;
    so.classes = std::stoi(a["classes"]);
    if (a.count("max_objects")) so.max_objects = std::stoi(a["max_objects"]);
    so.imgsz = imgsz;
    so.seed = 7;
    const auto yaml = data::write_synth_dataset(root / "data", so);
    const fs::path job = root / "job";
    fs::remove_all(job);
    fs::create_directories(job);
    Json options = {{"data", path_to_utf8(yaml)},
                    {"model", a["model"]},
                    {"imgsz", imgsz},
                    {"batch", batch},
                    {"epochs", epochs},
                    {"workers", std::stoi(a["workers"])},
                    {"loader_threads", std::stoi(a["loader_threads"])},
                    {"cache", a["cache"] == "true"},
                    {"device", a["device"]},
                    {"val", false},
                    {"log_steps", 1000}};
    // Any other key=value goes to the task options as given (numbers and booleans typed).
    for (const auto& [k, v] : a) {
        if (k == "train" || k == "classes" || k == "max_objects" || options.contains(k)) {
            if (k == "val") options[k] = v == "true";
            continue;
        }
        char* end = nullptr;
        const double d = std::strtod(v.c_str(), &end);
        if (v == "true" || v == "false")
            options[k] = v == "true";
        else if (end && *end == 0 && !v.empty())
            options[k] = d == static_cast<long long>(d) ? Json(static_cast<long long>(d)) : Json(d);
        else
            options[k] = v;
    }
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
    const auto phases = last_profile(job / "events.jsonl", epochs);
    double step_ms = 0, checkpoint_ms = 0;
    for (const auto& [name, ms] : phases) {
        if (name == "val" || name == "weights") continue;  // once per epoch, shown apart
        step_ms += ms;
        if (name == "checkpoint") checkpoint_ms = ms;
    }
    const int threads = engine::configure_cpu_threads(std::stoi(a["workers"]));
    const double pure_ms = pure_forward_backward_ms(a["model"], imgsz, batch, 4);
    const double img_s = batch / (step_ms / 1000.0);
    const double ref_img_s = batch / kReferenceSecondsPerIteration;
    std::printf("detect.yolo %s imgsz %d batch %d, %d train images, %d CPU threads\n",
                a["model"].c_str(), imgsz, batch, train, threads);
    std::printf("time per step in epoch %d:", epochs);
    for (const auto& [name, ms] : phases)
        std::printf(" %s %.1f ms;", name.c_str(), ms);
    std::printf("\nstep %.1f ms = %.1f img/s; reference %.0f ms = %.1f img/s; ratio %.2fx\n",
                step_ms, img_s, kReferenceSecondsPerIteration * 1000, ref_img_s, img_s / ref_img_s);
    std::printf("pure forward+backward %.1f ms; step / pure = %.2f\n", pure_ms, step_ms / pure_ms);
    std::printf("checkpoint share of training time at the default cadence: %.2f%%\n",
                100.0 * checkpoint_ms / step_ms);
    return 0;
}
