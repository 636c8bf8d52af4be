#include "plugins/detect/task/model_source.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/engine/weights_file.h"
#include "plugins/detect/pretrained/pretrained.h"

namespace crucible::detect {
namespace {

std::string lower_extension(const std::string& text) {
    std::string ext = path_to_utf8(path_from_utf8(text).extension());
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return ext;
}

std::filesystem::path existing_file(const std::string& model) {
    const auto path = path_from_utf8(model);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        throw InputError("model", model + ": no such file");
    return path;
}

LoadedDetectionModel from_pt(const std::string& model, std::optional<std::int64_t> num_classes) {
    LoadedDetectionModel out;
    PretrainedLoadReport report;
    out.model = load_pretrained_file(existing_file(model), num_classes, &out.names, &report);
    out.scale = out.model->options.scale();
    out.pretrained = true;
    out.new_head = !report.reinitialized.empty();
    out.description = "model " + model + ": YOLOv8" + std::string(1, out.scale.name) + ", " +
                      std::to_string(report.loaded.size()) + " tensors loaded";
    if (out.new_head)
        out.description += ", new class head for " + std::to_string(out.model->num_classes()) +
                           " classes (" + std::to_string(report.reinitialized.size()) +
                           " tensors re-initialised)";
    return out;
}

LoadedDetectionModel from_safetensors(const std::string& model,
                                      std::optional<std::int64_t> num_classes) {
    const auto path = existing_file(model);
    const auto meta = engine::read_safetensors_metadata(path);
    const auto scale_it = meta.find("crucible_yolo_scale");
    if (scale_it == meta.end() || scale_it->second.size() != 1)
        throw InputError("model", model +
                                      ": these weights do not say which YOLOv8 scale they are "
                                      "(no crucible_yolo_scale metadata); use weights=" +
                                      model + " with model=yolov8n (or s, m, l, x)");
    LoadedDetectionModel out;
    out.scale = yolo_scale(scale_it->second[0]);
    std::int64_t own_classes = 0;
    if (auto it = meta.find("crucible_nc"); it != meta.end()) {
        try {
            own_classes = std::stoll(it->second);
        } catch (const std::exception&) {
            throw InputError("model", model + ": metadata crucible_nc is not a number");
        }
    }
    if (auto it = meta.find("crucible_names"); it != meta.end()) {
        const Json names = parse_json(it->second, model + " metadata crucible_names");
        if (names.is_array())
            for (const auto& n : names)
                if (n.is_string()) out.names.push_back(n.get<std::string>());
    }
    if (own_classes <= 0) own_classes = static_cast<std::int64_t>(out.names.size());
    const std::int64_t classes = num_classes.value_or(own_classes);
    if (classes <= 0) throw InputError("model", model + ": the class count is unknown");
    out.model = DetectionModel(DetectionModelOptions(out.scale, classes));
    const auto report = engine::load_module_safetensors(*out.model, path);
    if (!report.missing.empty() && report.loaded == 0)
        throw InputError("model", model + ": holds no tensor of a YOLOv8" +
                                      std::string(1, out.scale.name) + " model");
    out.pretrained = true;
    out.new_head = !report.mismatched.empty();
    out.description = "model " + model + ": YOLOv8" + std::string(1, out.scale.name) + ", " +
                      std::to_string(report.loaded) + " tensors loaded";
    if (out.new_head)
        out.description += ", new class head for " + std::to_string(classes) + " classes";
    return out;
}

}  // namespace

LoadedDetectionModel load_detection_model(const std::string& model,
                                          std::optional<std::int64_t> num_classes) {
    if (model.empty()) throw InputError("model", "is empty: give yolov8n (or s/m/l/x) or a file");
    if (num_classes && *num_classes <= 0)
        throw InputError("model", "the class count must be positive");
    const std::string ext = lower_extension(model);
    if (ext == ".pt" || ext == ".pth") return from_pt(model, num_classes);
    if (ext == ".safetensors") return from_safetensors(model, num_classes);
    LoadedDetectionModel out;
    out.scale = yolo_scale_from_model_name(model);
    if (!num_classes)
        throw InputError("model", model +
                                      " is a fresh model: it needs a dataset (data=) for the "
                                      "class count, or pretrained weights (a .pt file)");
    out.model = DetectionModel(DetectionModelOptions(out.scale, *num_classes));
    out.description = "model " + model + ": YOLOv8" + std::string(1, out.scale.name) +
                      " from scratch, " + std::to_string(*num_classes) + " classes, " +
                      std::to_string(count_parameters(*out.model)) + " parameters";
    return out;
}

LoadedDetectionModel load_for_inference(const std::string& model, const torch::Device& device) {
    LoadedDetectionModel loaded = load_detection_model(model, std::nullopt);
    loaded.model->to(device);
    loaded.model->set_memory_format(torch::MemoryFormat::ChannelsLast);  // as in training
    loaded.model->eval();
    return loaded;
}

std::map<std::string, std::string> detection_weights_metadata(
    const YoloScale& scale, std::int64_t num_classes, const std::vector<std::string>& names) {
    return {{"crucible_yolo_scale", std::string(1, scale.name)},
            {"crucible_nc", std::to_string(num_classes)},
            {"crucible_names", Json(names).dump()}};
}

}  // namespace crucible::detect
