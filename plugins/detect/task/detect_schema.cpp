#include "plugins/detect/task/detect_schema.h"

#include <string>

#include "core/base/error.h"
#include "core/engine/train_options.h"

namespace crucible::detect {

OptionSchema detect_task_schema() {
    OptionSchema s("detect.yolo", "YOLOv8 object detection");
    OptionSpec data =
        option_spec("data", OptionType::Path, nullptr,
                    "dataset: data.yaml (Ultralytics), COCO .json or Pascal VOC folder", "data");
    data.required = true;
    s.add(data);
    // A Path, so the studio offers a file picker; model names are accepted too.
    s.add(option_spec("model", OptionType::Path, "yolov8n",
                      "yolov8n/s/m/l/x from scratch, an Ultralytics .pt checkpoint, or Crucible "
                      ".safetensors weights of a detection run",
                      "model"));
    s.add(integer_option("imgsz", 640, 32, 8192,
                         "training and validation image size (multiple of 32)", "data"));
    s.add(boolean_option("cache", false, "keep decoded, resized images in RAM", "data"));
    s.add(integer_option("loader_threads", 0, 0, 256,
                         "data loader threads (0: 1 per 4 CPU threads on CPU, all cores on CUDA)",
                         "data"));
    s.add(integer_option("max_pixels", 100'000'000, 1, 4e9,
                         "images whose header claims more pixels are skipped as bad", "data"));

    engine::TrainDefaults d;  // SPECS.md YOLOv8 defaults
    engine::add_training_options(s, d);
    s.add(boolean_option("sync_bn", false,
                         "with several ranks, BatchNorm statistics over all ranks' images "
                         "(SyncBatchNorm: one process's result, two all-reduces per BatchNorm "
                         "layer and step); off: each rank's own",
                         "train"));

    add_augment_options(s);
    add_nms_options(s, 0.001, "val");
    s.add(
        integer_option("val_batch", 0, 0, 65536, "validation batch size (0: twice batch)", "val"));
    s.add(number_option("box", 7.5, 0, 1000, "box (CIoU) loss gain", "loss"));
    s.add(number_option("cls", 0.5, 0, 1000, "class (BCE) loss gain", "loss"));
    s.add(number_option("dfl", 1.5, 0, 1000, "distribution focal loss gain", "loss"));
    return s;
}

void add_nms_options(OptionSchema& s, double default_conf, const std::string& group) {
    s.add(number_option("conf", default_conf, 0, 1, "confidence threshold", group));
    s.add(number_option("iou", 0.7, 0, 1, "NMS IoU threshold", group));
    s.add(integer_option("max_det", 300, 1, 100000, "detections kept per image", group));
}

NmsOptions nms_options_from(const Json& config) {
    NmsOptions o;
    o.conf_threshold = config.at("conf").get<double>();
    o.iou_threshold = config.at("iou").get<double>();
    o.max_det = static_cast<int>(config.at("max_det").get<long long>());
    return o;
}

int imgsz_from(const Json& config) {
    const auto imgsz = config.at("imgsz").get<long long>();
    if (imgsz <= 0 || imgsz % 32 != 0)
        throw InputError("imgsz",
                         std::to_string(imgsz) + " is not a multiple of 32 (the largest stride)");
    return static_cast<int>(imgsz);
}

void add_augment_options(OptionSchema& s) {
    const data::AugmentOptions d;
    const std::string aug = "augmentation";
    s.add(number_option("mosaic", d.mosaic, 0, 1, "probability of a 4-image mosaic", aug));
    s.add(integer_option("close_mosaic", d.close_mosaic, 0, 100000,
                         "mosaic off for the last N epochs", aug));
    s.add(number_option("degrees", d.degrees, 0, 180, "random rotation range (+/- degrees)", aug));
    s.add(
        number_option("translate", d.translate, 0, 0.9, "random translation (+/- fraction)", aug));
    s.add(number_option("scale", d.scale, 0, 0.95, "random scale gain (+/- fraction)", aug));
    s.add(number_option("shear", d.shear, 0, 90, "random shear (+/- degrees)", aug));
    s.add(number_option("perspective", d.perspective, 0, 0.001, "random perspective", aug));
    s.add(number_option("hsv_h", d.hsv_h, 0, 1, "hue gain", aug));
    s.add(number_option("hsv_s", d.hsv_s, 0, 1, "saturation gain", aug));
    s.add(number_option("hsv_v", d.hsv_v, 0, 1, "value gain", aug));
    s.add(number_option("fliplr", d.fliplr, 0, 1, "probability of a horizontal flip", aug));
    s.add(number_option("flipud", d.flipud, 0, 1, "probability of a vertical flip", aug));
}

data::AugmentOptions augment_options_from(const Json& config) {
    data::AugmentOptions o;
    o.imgsz = imgsz_from(config);
    o.close_mosaic = static_cast<int>(config.at("close_mosaic").get<long long>());
    for (auto [name, field] : {std::pair{"mosaic", &data::AugmentOptions::mosaic},
                               {"degrees", &data::AugmentOptions::degrees},
                               {"translate", &data::AugmentOptions::translate},
                               {"scale", &data::AugmentOptions::scale},
                               {"shear", &data::AugmentOptions::shear},
                               {"perspective", &data::AugmentOptions::perspective},
                               {"hsv_h", &data::AugmentOptions::hsv_h},
                               {"hsv_s", &data::AugmentOptions::hsv_s},
                               {"hsv_v", &data::AugmentOptions::hsv_v},
                               {"fliplr", &data::AugmentOptions::fliplr},
                               {"flipud", &data::AugmentOptions::flipud}})
        o.*field = config.at(name).get<double>();
    data::validate_augment_options(o);
    return o;
}

}  // namespace crucible::detect
