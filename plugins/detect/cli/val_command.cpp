// `crucible val detect key=value ...` (or --key value): validation in the `yolo val` habit,
// registered as the detection task's `val` command (core/engine/task_commands.h).
//
//   crucible val detect data=PATH/data.yaml predictions=DIR [split=val] [json=true]
//   crucible val detect labels=DIR predictions=DIR [imgsz=640] [json=true]
//   crucible val detect data=PATH/data.yaml model=WEIGHTS [imgsz=640] [batch=16] [json=true]
//   crucible val detect data=PATH/data.yaml model=EXPORT.onnx [json=true]
//
// scores a folder of prediction files in the `save_txt save_conf` layout (`class cx cy w h conf`
// per line, normalized; one `<image stem>.txt` per image; a missing file = no predictions)
// against the dataset's labels, and prints the reference's results table (all + per class) or,
// with json=true, JSON keyed by the results.csv names.
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/base/allocator.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/options_schema.h"
#include "core/data/dataset_io.h"
#include "core/data/per_image_report.h"
#include "core/engine/device.h"
#include "core/engine/task_commands.h"
#include "core/engine/threads.h"
#include "plugins/detect/cli/dataset_argument.h"
#include "plugins/detect/metrics/metrics_report.h"
#include "plugins/detect/metrics/prediction_folder.h"
#include "plugins/detect/task/detect_schema.h"
#include "plugins/detect/task/detect_task.h"
#include "plugins/detect/task/detection_validator.h"
#include "plugins/detect/task/exported_detector.h"
#include "plugins/detect/task/model_source.h"

namespace crucible::detect {
namespace {

OptionSchema val_detect_schema() {
    OptionSchema s("detect", "Validate detections");
    const std::string g = "general";
    s.add(option_spec("data", OptionType::Path, "",
                      "dataset: data.yaml, COCO .json or VOC folder (labels come from it)", g));
    s.add(option_spec(
        "labels", OptionType::Path, "",
        "alternative to data=: a folder of YOLO label .txt files (classes.txt gives names)", g));
    s.add(option_spec(
        "predictions", OptionType::Path, "",
        "folder of prediction files <image stem>.txt: class cx cy w h conf (normalized)", g));
    s.add(option_spec(
        "model", OptionType::String, "",
        "model to validate (with data=): an Ultralytics .pt, Crucible .safetensors or an .onnx "
        "export (its input size, batch and NMS are its own)",
        g));
    s.add(integer_option("batch", 16, 1, 4096, "batch size with model=", g));
    detect::add_nms_options(s, 0.001, g);  // with model=
    s.add(
        text_option("device", "", "with model=: cpu, a GPU index, or empty for the first GPU", g));
    s.add(integer_option("workers", 0, 0, 1024, "with model=: CPU threads (0: all cores)", g));
    s.add(option_spec("split", OptionType::Choice, "val", "dataset split scored with data=", g,
                      std::nullopt, std::nullopt, {"train", "val", "test"}));
    s.add(integer_option("imgsz", 0, 0, 65536,
                         "inference size with model= (multiple of 32; 0: 640, or an .onnx "
                         "export's own); with predictions=, the pixel scale for images of unknown "
                         "size (0: 640; IoU does not depend on it)",
                         g));
    s.add(boolean_option("json", false, "print the metrics as JSON with the results.csv names", g));
    s.add(
        text_option("tag", "", "also break the metrics down by this image tag (e.g. station)", g));
    s.add(text_option("per_image", "",
                      "with model=: write how each image fared (true and false positives, "
                      "misses, mean IoU, confusion cells, predictions) to this JSON file",
                      g, OptionType::Path));
    s.add(boolean_option(
        "curves", false,
        "with json=true, include the PR curve (precision at 1000 recall points per class)", g));
    return s;
}

data::DetectionDataset load_dataset(const Json& opt, std::string& split) {
    const std::string data_path = opt["data"].get<std::string>();
    const std::string labels_path = opt["labels"].get<std::string>();
    if (!data_path.empty() && !labels_path.empty())
        throw InputError("labels", "give either data= or labels=, not both");
    if (!labels_path.empty()) {
        split.clear();  // a label folder has no splits
        return detect::load_label_folder(path_from_utf8(labels_path));
    }
    if (data_path.empty())
        throw InputError("data",
                         "is required: a data.yaml (or labels=DIR, a folder of label files)");
    return detect::load_data_argument(data_path, /*read_image_sizes=*/false);
}

// Validates a model (model=) on the dataset's split, as training validates every epoch.
int run_val_model(const Json& opt) {
    if (!opt["predictions"].get<std::string>().empty())
        throw InputError("predictions", "give either model= or predictions=, not both");
    if (opt["data"].get<std::string>().empty())
        throw InputError("data", "is required with model=: a data.yaml, COCO .json or VOC folder");
    const auto dataset =
        detect::load_data_argument(opt["data"].get<std::string>(), /*read_image_sizes=*/true);
    const int threads =
        engine::configure_cpu_threads(static_cast<int>(opt["workers"].get<long long>()));
    keep_freed_memory_for_reuse();  // one forward per batch reuses its buffers
    const auto device = engine::choose_device(opt["device"].get<std::string>());
    const std::string model_name = opt["model"].get<std::string>();
    auto model = detect::load_inference_model(model_name, device.device);
    const auto* exported = model.exported.get();  // its own size and NMS, if any
    if (model.classes != static_cast<std::int64_t>(dataset.class_names.size()))
        throw InputError("model", model_name + " has " + std::to_string(model.classes) +
                                      " classes but the dataset has " +
                                      std::to_string(dataset.class_names.size()));
    detect::ValidatorOptions vo;
    vo.imgsz = detect::inference_size(opt["imgsz"].get<long long>(), exported);
    vo.batch = static_cast<int>(opt["batch"].get<long long>());
    vo.workers = std::max(1, threads / 2);
    vo.nms = detect::nms_options_from(opt);
    const std::string split = opt["split"].get<std::string>();
    // per_image=: each image's outcome under the confusion matrix's matching.
    data::PerImageReport per_image;
    per_image.names = dataset.class_names;
    per_image.conf = vo.confusion_conf;
    per_image.iou = vo.confusion_iou;
    const detect::ConfusionMatrix matcher(static_cast<int>(dataset.class_names.size()),
                                          vo.confusion_conf, vo.confusion_iou);
    const std::string per_image_file = opt["per_image"].get<std::string>();
    if (!per_image_file.empty())
        vo.on_image = [&](const detect::ValidatedImage& v) {
            const auto match = matcher.match_image(v.gts, v.preds);
            data::ImageOutcome o;
            o.path = v.record.path.is_absolute() ? v.record.path : dataset.root / v.record.path;
            o.split = v.record.split;
            o.tags = v.record.tags;
            o.true_positives = match.true_positives;
            o.false_positives = match.false_positives;
            o.misses = match.misses;
            o.mean_iou = match.mean_iou;
            o.cells = match.cells;
            for (const auto& g : v.gts)
                o.truth_classes.push_back(g.cls);
            // mAP's own matching: a PR-curve point traces back to these flags.
            const auto tp = detect::match_predictions_in_any_order(v.gts, v.preds);
            const double rx = v.region[0], ry = v.region[1];
            const double rw = std::max(v.region[2], 1), rh = std::max(v.region[3], 1);
            for (std::size_t i = 0; i < v.preds.size(); ++i) {
                const auto& p = v.preds[i];
                o.predictions.push_back(
                    {{p.cls, ((p.x1 + p.x2) / 2 - rx) / rw, ((p.y1 + p.y2) / 2 - ry) / rh,
                      (p.x2 - p.x1) / rw, (p.y2 - p.y1) / rh},
                     p.conf,
                     (tp[i] & 1u) != 0});
            }
            per_image.images.push_back(std::move(o));
        };
    detect::DetectionValidator validator(dataset, split, vo);
    const auto r = exported ? validator.run_detections([&](const torch::Tensor& images) {
        return exported->detect(images, vo.nms);
    })
                            : validator.run(*model.module.model);
    if (!per_image_file.empty()) {
        // Every tag key an image carries gets its breakdown (the drill-down's per-tag table).
        std::set<std::string> keys;
        for (const auto& im : per_image.images)
            for (const auto& [key, value] : im.tags)
                keys.insert(key);
        for (const auto& key : keys)
            for (const auto& [value, m] : r.stats.compute_by_tag(key))
                per_image.by_tag[key][value] = {m.images, m.instances, m.precision,
                                                m.recall, m.map50,     m.map50_95};
        write_json_file(path_from_utf8(per_image_file), data::per_image_report_json(per_image));
    }
    for (const auto& b : r.bad)
        std::fprintf(stderr, "skipped %s: %s\n", path_to_utf8(b.path).c_str(), b.message.c_str());
    const std::string tag = opt["tag"].get<std::string>();
    const detect::ValidationReport report{r.metrics, r.confusion, dataset.class_names, tag,
                                          tag.empty()
                                              ? std::map<std::string, detect::DetectionMetrics>()
                                              : r.stats.compute_by_tag(tag)};
    if (opt["json"].get<bool>()) {
        Json out = detect::validation_json(report, opt["curves"].get<bool>());
        out["val/box_loss"] = r.losses[0];
        out["val/cls_loss"] = r.losses[1];
        out["val/dfl_loss"] = r.losses[2];
        std::printf("%s\n", out.dump(1).c_str());
        return 0;
    }
    std::printf("%s on %s, split %s: %d images in %.1f s\n", model.description.c_str(),
                device.describe().c_str(), split.c_str(), r.metrics.images, r.seconds);
    std::printf("%s", detect::validation_text(report).c_str());
    return 0;
}

int run_val_detect(const Json& opt) {
    if (!opt["model"].get<std::string>().empty()) return run_val_model(opt);
    const std::string predictions = opt["predictions"].get<std::string>();
    if (predictions.empty())
        throw InputError("predictions",
                         "is required: a folder of <image stem>.txt prediction files");

    std::string split = opt["split"].get<std::string>();
    const auto dataset = load_dataset(opt, split);

    detect::PredictionFolderOptions options;
    options.split = split;
    const auto imgsz = opt["imgsz"].get<long long>();
    options.imgsz = imgsz ? static_cast<int>(imgsz) : 640;
    options.tag_key = opt["tag"].get<std::string>();
    const auto result =
        detect::evaluate_prediction_folder(dataset, path_from_utf8(predictions), options);
    if (result.metrics.images == 0)
        throw InputError(split.empty() ? "labels" : "split",
                         split.empty() ? "no label files found"
                                       : "the dataset has no images in split '" + split + "'");

    if (opt["json"].get<bool>()) {
        Json out = detect::prediction_folder_json(result, options.tag_key);
        if (opt["curves"].get<bool>())
            out["pr_curve"] = detect::pr_curve_json(result.metrics, result.class_names);
        std::printf("%s\n", out.dump(1).c_str());
        return 0;
    }
    std::printf("%d images, %d prediction files (%lld predictions) from %s\n",
                result.metrics.images, result.prediction_files, result.predictions,
                path_to_utf8(result.predictions_dir).c_str());
    std::printf("%s", detect::validation_text({result.metrics, result.confusion, result.class_names,
                                               options.tag_key, result.by_tag})
                          .c_str());
    if (!result.unmatched_files.empty()) {
        std::fprintf(stderr,
                     "warning: %zu prediction files name no image of the dataset (first: %s)\n",
                     result.unmatched_files.size(), result.unmatched_files.front().c_str());
    }
    return 0;
}

engine::RegisterTaskCommand val_command(
    {kDetectTaskId,
     "val",
     "score predictions or a model against a dataset's labels",
     &val_detect_schema,
     &run_val_detect,
     {},
     {"data=PATH/data.yaml predictions=DIR [split=val] [json=true]",
      "labels=DIR predictions=DIR [imgsz=640] [json=true]",
      "data=PATH/data.yaml model=WEIGHTS [imgsz=640] [json=true]",
      "data=PATH/data.yaml model=EXPORT.onnx [json=true]"},
     "Scores prediction files (<image stem>.txt: class cx cy w h conf, normalized: the\n"
     "save_txt save_conf layout) against the dataset's labels with the Ultralytics metrics,\n"
     "or validates a model on the dataset's split as training does every epoch. An exported\n"
     ".onnx model runs as it is (Crucible's ONNX runner), at its own size and with its own NMS."});

}  // namespace
}  // namespace crucible::detect
