// `crucible predict detect source=DIR|FILE model=... [conf=0.25] [iou=0.7] [imgsz=640]`: runs a
// detection model on images and writes them with their boxes drawn (and, with save_txt=true,
// label files in the `save_txt save_conf` layout that `crucible val detect predictions=` reads)
// to runs/detect/predict, predict2, ... as the yolo CLI does. The detection task's `predict`
// command (core/engine/task_commands.h).
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/base/allocator.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/options_schema.h"
#include "core/data/draw_boxes.h"
#include "core/data/formats/format_util.h"
#include "core/data/formats/yolo_labels.h"
#include "core/data/image_io.h"
#include "core/engine/device.h"
#include "core/engine/run_folder.h"
#include "core/engine/task_commands.h"
#include "core/engine/threads.h"
#include "plugins/detect/metrics/metrics_report.h"
#include "plugins/detect/task/detect_schema.h"
#include "plugins/detect/task/detect_task.h"
#include "plugins/detect/task/exported_detector.h"
#include "plugins/detect/task/model_source.h"
#include "plugins/detect/task/predictor.h"

namespace crucible::detect {
namespace {

OptionSchema predict_schema() {
    OptionSchema s("detect", "Predict with a detection model");
    const std::string g = "general";
    s.add(option_spec("source", OptionType::Path, "", "an image file or a folder of images", g));
    s.add(option_spec("model", OptionType::Path, "",
                      "an Ultralytics .pt, the Crucible .safetensors of a detection run, or an "
                      ".onnx export (run at its own input size)",
                      g));
    s.add(option_spec("imgsz", OptionType::Integer, 0,
                      "inference size (multiple of 32; 0: 640, or an .onnx export's own)", g, 0,
                      8192));
    detect::add_nms_options(s, 0.25, g);
    s.add(option_spec("agnostic_nms", OptionType::Boolean, false,
                      "classes suppress each other in NMS", g));
    s.add(option_spec("device", OptionType::String, "",
                      "cpu, a GPU index, or empty for the first GPU", g));
    s.add(option_spec("workers", OptionType::Integer, 0, "CPU threads (0: all cores)", g, 0, 1024));
    s.add(option_spec("save", OptionType::Boolean, true, "write the images with their boxes drawn",
                      g));
    s.add(option_spec("save_txt", OptionType::Boolean, false,
                      "write labels/<stem>.txt: class cx cy w h conf (normalized)", g));
    s.add(option_spec("project", OptionType::Path, "",
                      "folder for the output (default runs/detect)", g));
    s.add(option_spec("name", OptionType::String, "predict",
                      "output folder name (predict2, ... when taken)", g));
    s.add(
        option_spec("exist_ok", OptionType::Boolean, false, "reuse an existing output folder", g));
    return s;
}

std::vector<std::filesystem::path> list_images(const std::string& source) {
    if (source.empty()) throw InputError("source", "is required: an image file or a folder");
    const auto path = path_from_utf8(source);
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return {path};
    if (!std::filesystem::is_directory(path, ec))
        throw InputError("source", source + ": no such file or folder");
    const auto out = data::detail::list_images(path);
    if (out.empty()) throw InputError("source", source + ": holds no images");
    return out;
}

int run_predict_detect(const Json& opt) {
    const auto images = list_images(opt["source"].get<std::string>());
    const std::string model_name = opt["model"].get<std::string>();
    if (model_name.empty())
        throw InputError("model",
                         "is required: a .pt, .safetensors or exported .onnx detection model");
    engine::configure_cpu_threads(static_cast<int>(opt["workers"].get<long long>()));
    keep_freed_memory_for_reuse();  // one forward per batch reuses its buffers
    const auto device = engine::choose_device(opt["device"].get<std::string>());

    detect::PredictOptions po;
    po.nms = detect::nms_options_from(opt);
    po.nms.multi_label = false;  // one class per box, as the reference's predict
    po.nms.agnostic = opt["agnostic_nms"].get<bool>();
    auto model = detect::load_inference_model(model_name, device.device);
    const auto* exported = model.exported.get();  // its own size and NMS, if any
    po.imgsz = detect::inference_size(opt["imgsz"].get<long long>(), exported);
    const auto predict = [&](const cv::Mat& image) {
        if (!exported) return detect::predict_image(*model.module.model, image, po);
        return detect::predict_image(
            [&](const torch::Tensor& x) { return exported->detect(x, po.nms); }, device.device,
            image, po);
    };

    const auto out_dir = engine::claim_run_folder(
        std::filesystem::current_path(), "detect", opt["project"].get<std::string>(),
        opt["name"].get<std::string>(), opt["exist_ok"].get<bool>());
    const bool save = opt["save"].get<bool>(), save_txt = opt["save_txt"].get<bool>();
    if (save_txt) std::filesystem::create_directories(out_dir / "labels");
    std::printf("%s on %s\n", model.description.c_str(), device.describe().c_str());

    std::size_t n = 0, bad = 0, total = 0;
    for (const auto& file : images) {
        ++n;
        cv::Mat image;
        try {
            image = data::read_image(file);
        } catch (const std::exception& e) {
            ++bad;
            std::fprintf(stderr, "skipped %s\n", e.what());
            continue;
        }
        const auto detections = predict(image);
        total += detections.size();
        std::map<int, int> per_class;
        std::string txt;
        for (const auto& d : detections) {
            ++per_class[d.cls];
            const data::PixelBox box{d.cls, d.x1, d.y1, d.x2, d.y2};
            if (save_txt) {  // the YOLO label row plus the confidence
                const auto normalized = data::to_normalized_boxes({box}, image.cols, image.rows);
                txt += data::format_yolo_row(normalized.front()) + " " +
                       data::format_number(d.conf) + "\n";
            }
        }
        if (save) detect::draw_detections(image, detections, model.names);
        std::string summary;
        for (const auto& [cls, count] : per_class) {
            summary += summary.empty() ? "" : ", ";
            summary += std::to_string(count) + " ";
            summary += detect::class_display_name(model.names, cls);
        }
        std::printf("image %zu/%zu %s: %s\n", n, images.size(), path_to_utf8(file).c_str(),
                    summary.empty() ? "(no detections)" : summary.c_str());
        const auto stem = file.stem();
        if (save) {
            auto name = file.filename();
            if (name.extension() != ".jpg" && name.extension() != ".png")
                name.replace_extension(".jpg");
            data::write_image(out_dir / name, image);
        }
        if (save_txt) {
            auto label_file = out_dir / "labels" / stem;
            label_file += ".txt";
            write_file_atomically(label_file, txt);
        }
    }
    std::printf("%zu images, %zu detections%s; results in %s\n", images.size() - bad, total,
                bad ? (", " + std::to_string(bad) + " unreadable skipped").c_str() : "",
                path_to_utf8(out_dir).c_str());
    return bad == images.size() ? 1 : 0;
}

engine::RegisterTaskCommand predict_command(
    {kDetectTaskId,
     "predict",
     "run a model on images and draw its detections",
     &predict_schema,
     &run_predict_detect,
     {},
     {"source=DIR|FILE model=WEIGHTS [conf=0.25] [iou=0.7] [imgsz=640] [save_txt=true]",
      "source=DIR|FILE model=EXPORT.onnx [conf=0.25] [save_txt=true]"},
     {},
     "project"});  // on an agent (pre-labelling on its GPU) the output stays in the job folder

}  // namespace
}  // namespace crucible::detect
