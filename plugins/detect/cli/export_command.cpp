// `crucible export detect model=WEIGHTS format=safetensors [out=FILE]`: converts detection
// weights (an Ultralytics .pt read without Python, or a Crucible .safetensors) into Crucible
// safetensors weights that record their scale and class names. The detection task's `export`
// command (core/engine/task_commands.h).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/options_schema.h"
#include "core/engine/task_commands.h"
#include "core/engine/weights_file.h"
#include "plugins/detect/task/detect_task.h"
#include "plugins/detect/task/model_source.h"

namespace crucible::detect {
namespace {

OptionSchema export_schema() {
    OptionSchema s("detect", "Export detection weights");
    const std::string g = "general";
    s.add(
        text_option("model", "", "weights to export: Ultralytics .pt or Crucible .safetensors", g));
    s.add(option_spec("format", OptionType::Choice, "safetensors", "output format", g, std::nullopt,
                      std::nullopt, {"safetensors"}));
    s.add(text_option("out", "", "output file (default: the model's name with .safetensors)", g,
                      OptionType::Path));
    return s;
}

int run_export(const Json& opt) {
    const std::string model = opt["model"].get<std::string>();
    if (model.empty()) throw InputError("model", "is required: a .pt or .safetensors file");
    auto loaded = load_detection_model(model, std::nullopt);
    std::filesystem::path out = path_from_utf8(opt["out"].get<std::string>());
    if (out.empty()) {
        out = path_from_utf8(model);
        out.replace_extension(".safetensors");
        if (out == path_from_utf8(model)) throw InputError("out", "would overwrite the input");
    }
    auto meta = detection_weights_metadata(loaded.scale, loaded.model->num_classes(), loaded.names);
    meta["crucible_task"] = "detect.yolo";
    meta["crucible_source"] = path_to_utf8(path_from_utf8(model).filename());
    engine::save_module_safetensors(*loaded.model, out, meta);
    std::printf("%s\nwrote %s (YOLOv8%c, %lld classes)\n", loaded.description.c_str(),
                path_to_utf8(out).c_str(), loaded.scale.name,
                static_cast<long long>(loaded.model->num_classes()));
    return 0;
}

engine::RegisterTaskCommand export_command(
    {kDetectTaskId,
     "export",
     "convert weights (Ultralytics .pt) to Crucible safetensors",
     &export_schema,
     &run_export,
     {"model"},
     {"model=WEIGHTS [format=safetensors] [out=FILE]"}});

}  // namespace
}  // namespace crucible::detect
