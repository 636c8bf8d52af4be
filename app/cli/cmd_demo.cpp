// `crucible demo [dir=crucible-demo] [epochs=3]`: the headless first-run demo (what the README's
// *run* command starts when there is no display). It writes a small synthetic shapes dataset,
// trains YOLOv8n on it for a few epochs with live progress, and runs the trained model on the
// validation images — the whole loop a user goes through, in about a minute on a laptop CPU.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "app/cli/command.h"
#include "app/cli/new_run.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/job_folder.h"
#include "core/base/json.h"
#include "core/base/options_schema.h"
#include "core/data/synth/synth.h"
#include "core/engine/device.h"
#include "core/engine/job.h"
#include "core/engine/task.h"

namespace crucible::cli {
namespace {

OptionSchema demo_schema() {
    OptionSchema s("demo", "Headless demo");
    const std::string g = "general";
    s.add(text_option("dir", "crucible-demo", "folder for the demo dataset and runs", g,
                      OptionType::Path));
    s.add(integer_option("epochs", 3, 1, 1000, "training epochs", g));
    s.add(text_option("device", "", "cpu, a GPU index, or empty for the first GPU", g));
    return s;
}

int run_demo(const std::vector<std::string>& args) {
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
        std::printf("usage: crucible demo [dir=crucible-demo] [epochs=3] [device=cpu]\n");
        return 0;
    }
    const auto schema = demo_schema();
    const Json opt = schema.resolve(schema.parse_key_values(args));
    const auto root = std::filesystem::absolute(path_from_utf8(opt["dir"].get<std::string>()));
    std::printf("Crucible %s demo\n", CRUCIBLE_VERSION);
    std::printf("  device: %s\n",
                engine::choose_device(opt["device"].get<std::string>()).describe().c_str());

    data::SynthOptions so;  // 64 train / 16 val images, 4 classes, seed 0
    so.imgsz = 160;
    const auto yaml = data::write_synth_dataset(root / "data", so);
    std::printf("  dataset: %d train / %d val synthetic images, %d shape classes: %s\n", so.train,
                so.val, so.classes, path_to_utf8(yaml).c_str());

    const auto& info = engine::TaskRegistry::instance().get("detect.yolo");
    const Json options = {{"data", path_to_utf8(yaml)},
                          {"model", "yolov8n"},
                          {"imgsz", 160},
                          {"batch", 16},
                          {"epochs", opt["epochs"].get<long long>()},
                          {"close_mosaic", 1},
                          {"device", opt["device"].get<std::string>()},
                          {"log_steps", 2}};
    const auto run_dir = prepare_new_run(info, options, root);
    std::printf("  training YOLOv8n for %lld epochs in %s\n\n", opt["epochs"].get<long long>(),
                path_to_utf8(run_dir).c_str());
    std::fflush(stdout);  // before the engine's log lines, also when stdout is a pipe
    const int code = engine::run_job(run_dir, {});
    if (code != 0) return code;
    const auto best = JobFolder{run_dir}.weights() / "best.safetensors";
    std::printf(
        "\nDone. Next steps:\n"
        "  crucible val detect data=%s model=%s\n"
        "  crucible predict detect source=%s model=%s\n"
        "  crucible train resume=%s epochs=%lld   (continue training)\n",
        path_to_utf8(yaml).c_str(), path_to_utf8(best).c_str(),
        path_to_utf8(root / "data" / "images" / "val").c_str(), path_to_utf8(best).c_str(),
        path_to_utf8(run_dir).c_str(), opt["epochs"].get<long long>() * 2);
    return 0;
}

RegisterCommand reg({"demo", "run the headless demo (synthetic dataset, short YOLOv8n training)",
                     &run_demo});

}  // namespace
}  // namespace crucible::cli
