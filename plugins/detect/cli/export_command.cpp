// `crucible export detect model=WEIGHTS [format=safetensors|onnx] [out=FILE] ...`: converts
// detection weights (an Ultralytics .pt read without Python, or a Crucible .safetensors) into
// Crucible safetensors weights that record their scale and class names, or into an ONNX model
// for inspection software (OpenCV DNN, ONNX Runtime, TensorRT) with the `yolo export` keys
// imgsz, batch, dynamic, half and opset. The detection task's `export` command
// (core/engine/task_commands.h).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/base/child_process.h"
#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/options_schema.h"
#include "core/engine/task_commands.h"
#include "core/engine/weights_file.h"
#include "plugins/detect/cli/dataset_argument.h"
#include "plugins/detect/export/yolo_onnx.h"
#include "plugins/detect/task/detect_task.h"
#include "plugins/detect/task/detection_validator.h"
#include "plugins/detect/task/exported_detector.h"
#include "plugins/detect/task/model_source.h"

namespace crucible::detect {
namespace {

OptionSchema export_schema() {
    OptionSchema s("detect", "Export detection weights");
    const std::string g = "general";
    s.add(
        text_option("model", "", "weights to export: Ultralytics .pt or Crucible .safetensors", g));
    s.add(option_spec("format", OptionType::Choice, "safetensors", "output format", g, std::nullopt,
                      std::nullopt, {"safetensors", "onnx"}));
    s.add(text_option("out", "", "output file (default: the model's name with the format's suffix)",
                      g, OptionType::Path));
    const std::string onnx = "onnx";
    s.add(integer_option("imgsz", 640, 32, 8192, "input size (square, a multiple of 32)", onnx));
    s.add(integer_option("batch", 1, 1, 1024, "batch size of a fixed-size model", onnx));
    s.add(boolean_option("dynamic", false, "batch, height and width chosen at run time", onnx));
    s.add(boolean_option("half", false, "fp16 weights, input and output", onnx));
    s.add(integer_option("opset", 17, static_cast<double>(kMinYoloOpset), 21, "ONNX operator set",
                         onnx));
    s.add(boolean_option("nms", false,
                         "add non-maximum suppression: output0 becomes one row per box (batch, x1, "
                         "y1, x2, y2, score, class); ONNX Runtime and TensorRT run it, OpenCV "
                         "DNN 4.6 does not",
                         onnx));
    s.add(number_option("conf", 0.25, 0.0, 1.0, "with nms=true: the lowest score kept", onnx));
    s.add(
        number_option("iou", 0.7, 0.0, 1.0, "with nms=true: the IoU above which a box goes", onnx));
    s.add(integer_option("max_det", 300, 1, 100000, "with nms=true: boxes kept per class and image",
                         onnx));
    s.add(text_option("data", "",
                      "dataset (data.yaml, COCO .json or VOC folder): re-score the export on it "
                      "and refuse it if its mAP50 is more than 0.01 below the model's",
                      onnx, OptionType::Path));
    s.add(option_spec("split", OptionType::Choice, "val", "dataset split re-scored with data=",
                      onnx, std::nullopt, std::nullopt, {"train", "val", "test"}));
    return s;
}

// The largest mAP50 an export may lose against the model it came from.
constexpr double kAllowedMap50Drop = 0.01;

// Runs crucible-onnx-check (OpenCV DNN, in a process of its own) on the written file: its
// metrics on the dataset's split.
Json onnx_metrics(const std::filesystem::path& file, const YoloOnnxOptions& o, const Json& opt) {
    ChildOptions c;
    c.program = sibling_program("crucible-onnx-check", "../plugins/detect");
    c.args = {path_to_utf8(file), opt["data"].get<std::string>(), opt["split"].get<std::string>(),
              std::to_string(o.height), std::to_string(o.batch)};
    c.log_file = std::filesystem::path(file).concat(".check.log");
    const auto exit = ChildProcess::start(c)->wait();
    const std::string log = read_file_bytes(c.log_file);
    std::error_code ec;
    std::filesystem::remove(c.log_file, ec);
    const auto line = log.rfind("{\"images\"");
    if (exit.code != 0 || line == std::string::npos)
        throw Error(path_to_utf8(file) + ": the ONNX check failed (" +
                    path_to_utf8(c.program.filename()) + ", exit " + std::to_string(exit.code) +
                    "):\n" + log);
    return Json::parse(log.substr(line, log.find('\n', line) - line));
}

// Re-scores the written ONNX file and the model it came from (LibTorch) on the dataset's split
// with the same validator settings; throws when the export loses more than kAllowedMap50Drop of
// mAP50. A fixed-size fp32 file runs in OpenCV DNN, as inspection software runs it; OpenCV DNN
// 4.6 loads no dynamic, fp16 or NMS export, so those run in Crucible's ONNX runner. An NMS
// export is compared with the model under the graph's own thresholds.
void rescore_export(DetectionModelImpl& model, const std::filesystem::path& file,
                    const YoloOnnxOptions& o, const Json& opt) {
    const auto dataset = load_data_argument(opt["data"].get<std::string>(), true);
    if (static_cast<std::int64_t>(dataset.class_names.size()) != model.num_classes())
        throw InputError("data", "has " + std::to_string(dataset.class_names.size()) +
                                     " classes but the model " +
                                     std::to_string(model.num_classes()));
    ValidatorOptions vo;
    vo.imgsz = static_cast<int>(o.height);
    vo.batch = static_cast<int>(std::max<std::int64_t>(o.batch, 8));
    if (o.nms) {
        vo.nms.conf_threshold = o.nms_conf;
        vo.nms.iou_threshold = o.nms_iou;
        vo.nms.max_det =
            static_cast<int>(o.max_det * model.num_classes());  // the graph's is per class
    }
    const std::string split = opt["split"].get<std::string>();
    DetectionValidator validator(dataset, split, vo);  // one listing of the split for both
    const auto ours = validator.run(model).metrics;
    const bool opencv = !o.dynamic && !o.half && !o.nms;
    double map50 = 0, map50_95 = 0;
    if (opencv) {
        const Json exported = onnx_metrics(file, o, opt);
        map50 = exported.at("map50").get<double>();
        map50_95 = exported.at("map50_95").get<double>();
    } else {
        const torch::Device device = model.parameters().front().device();
        const ExportedDetector exported(file, device);
        const auto r = validator
                           .run_detections([&](const torch::Tensor& images) {
                               return exported.detect(images, vo.nms);
                           })
                           .metrics;
        map50 = r.map50;
        map50_95 = r.map50_95;
    }
    const double drop = ours.map50 - map50;
    std::printf(
        "re-scored on %d images of split %s: mAP50 %.4f (LibTorch) and %.4f (the ONNX "
        "file in %s), mAP50-95 %.4f and %.4f\n",
        ours.images, split.c_str(), ours.map50, map50,
        opencv ? "OpenCV DNN" : "Crucible's ONNX runner", ours.map50_95, map50_95);
    if (drop > kAllowedMap50Drop) {
        char text[160];
        std::snprintf(text, sizeof text,
                      "the export is not good: its mAP50 is %.4f below the model's (at most %.2f "
                      "is allowed)",
                      drop, kAllowedMap50Drop);
        throw Error(path_to_utf8(file) + ": " + text);
    }
    std::printf("export checked: mAP50 within %.2f of the model's\n", kAllowedMap50Drop);
}

std::string file_size_text(const std::filesystem::path& file) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MB",
                  static_cast<double>(std::filesystem::file_size(file)) / 1e6);
    return text;
}

int run_export(const Json& opt) {
    const std::string model = opt["model"].get<std::string>();
    if (model.empty()) throw InputError("model", "is required: a .pt or .safetensors file");
    const std::string format = opt["format"].get<std::string>();
    auto loaded = load_detection_model(model, std::nullopt);
    const std::string suffix = format == "onnx" ? ".onnx" : ".safetensors";
    std::filesystem::path out = path_from_utf8(opt["out"].get<std::string>());
    if (out.empty()) {
        out = path_from_utf8(model);
        out.replace_extension(suffix);
        if (out == path_from_utf8(model)) throw InputError("out", "would overwrite the input");
    }
    std::vector<std::string> names = loaded.names;
    for (auto i = static_cast<std::int64_t>(names.size()); i < loaded.model->num_classes(); ++i)
        names.push_back("class" + std::to_string(i));
    if (format == "onnx") {
        YoloOnnxOptions o;
        o.height = o.width = opt["imgsz"].get<std::int64_t>();
        o.batch = opt["batch"].get<std::int64_t>();
        o.dynamic = opt["dynamic"].get<bool>();
        o.half = opt["half"].get<bool>();
        o.opset = opt["opset"].get<std::int64_t>();
        o.nms = opt["nms"].get<bool>();
        o.nms_conf = opt["conf"].get<double>();
        o.nms_iou = opt["iou"].get<double>();
        o.max_det = opt["max_det"].get<std::int64_t>();
        loaded.model->eval();
        auto m = yolo_onnx_model(*loaded.model, names, o);
        m.producer_version = CRUCIBLE_VERSION;
        m.metadata.push_back({"crucible_source", path_to_utf8(path_from_utf8(model).filename())});
        write_file_atomically(out, onnx::serialize_onnx_model(m));
        std::printf("%s\nwrote %s (YOLOv8%c, %lld classes, %s, %s, opset %lld, %s)\n",
                    loaded.description.c_str(), path_to_utf8(out).c_str(), loaded.scale.name,
                    static_cast<long long>(loaded.model->num_classes()), o.half ? "fp16" : "fp32",
                    o.dynamic ? "dynamic batch and size"
                              : ("input " + std::to_string(o.batch) + "x3x" +
                                 std::to_string(o.height) + "x" + std::to_string(o.width))
                                    .c_str(),
                    static_cast<long long>(o.opset), file_size_text(out).c_str());
        if (!opt["data"].get<std::string>().empty()) rescore_export(*loaded.model, out, o, opt);
        return 0;
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
     "convert weights (Ultralytics .pt) to Crucible safetensors or to ONNX",
     &export_schema,
     &run_export,
     {"model"},
     {"model=WEIGHTS [format=safetensors] [out=FILE]",
      "model=WEIGHTS format=onnx [imgsz=640] [batch=1] [dynamic=true] [half=true] [opset=17]",
      "model=WEIGHTS format=onnx nms=true [conf=0.25] [iou=0.7] [max_det=300]",
      "model=WEIGHTS format=onnx data=DATASET [split=val]   # re-score the export"}});

}  // namespace
}  // namespace crucible::detect
