#include "plugins/detect/task/detect_schema.h"

#include <optional>
#include <string>

#include "core/engine/train_options.h"

namespace crucible::detect {
namespace {

OptionSpec number(std::string name, double def, double min, double max, std::string help,
                  std::string group) {
    OptionSpec s;
    s.name = std::move(name);
    s.type = OptionType::Number;
    s.default_value = def;
    s.min = min;
    s.max = max;
    s.help = std::move(help);
    s.group = std::move(group);
    return s;
}

OptionSpec integer(std::string name, long long def, double min, double max, std::string help,
                   std::string group) {
    OptionSpec s = number(std::move(name), 0, min, max, std::move(help), std::move(group));
    s.type = OptionType::Integer;
    s.default_value = def;
    return s;
}

OptionSpec boolean(std::string name, bool def, std::string help, std::string group) {
    OptionSpec s;
    s.name = std::move(name);
    s.type = OptionType::Boolean;
    s.default_value = def;
    s.help = std::move(help);
    s.group = std::move(group);
    return s;
}

}  // namespace

OptionSchema detect_task_schema() {
    OptionSchema s("detect.yolo", "YOLOv8 object detection");
    OptionSpec data;
    data.name = "data";
    data.type = OptionType::Path;
    data.default_value = nullptr;
    data.required = true;
    data.help = "dataset: data.yaml (Ultralytics), COCO .json or Pascal VOC folder";
    data.group = "data";
    s.add(data);
    OptionSpec model;
    model.name = "model";
    model.type = OptionType::Path;  // the studio offers a file picker; names are accepted too
    model.default_value = "yolov8n";
    model.help =
        "yolov8n/s/m/l/x from scratch, an Ultralytics .pt checkpoint, or Crucible .safetensors "
        "weights of a detection run";
    model.group = "model";
    s.add(model);
    s.add(integer("imgsz", 640, 32, 8192, "training and validation image size (multiple of 32)",
                  "data"));
    s.add(boolean("cache", false, "keep decoded, resized images in RAM", "data"));
    s.add(integer("loader_threads", 0, 0, 256,
                  "data loader threads (0: 1 per 4 CPU threads on CPU, all cores on CUDA)",
                  "data"));
    s.add(integer("max_pixels", 100'000'000, 1, 4e9,
                  "images whose header claims more pixels are skipped as bad", "data"));

    engine::TrainDefaults d;  // SPECS.md YOLOv8 defaults
    engine::add_training_options(s, d);

    const std::string aug = "augmentation";
    s.add(number("mosaic", 1.0, 0, 1, "probability of a 4-image mosaic", aug));
    s.add(integer("close_mosaic", 10, 0, 100000, "mosaic off for the last N epochs", aug));
    s.add(number("degrees", 0.0, 0, 180, "random rotation range (+/- degrees)", aug));
    s.add(number("translate", 0.1, 0, 0.9, "random translation (+/- fraction)", aug));
    s.add(number("scale", 0.5, 0, 0.95, "random scale gain (+/- fraction)", aug));
    s.add(number("shear", 0.0, 0, 90, "random shear (+/- degrees)", aug));
    s.add(number("perspective", 0.0, 0, 0.001, "random perspective", aug));
    s.add(number("hsv_h", 0.015, 0, 1, "hue gain", aug));
    s.add(number("hsv_s", 0.7, 0, 1, "saturation gain", aug));
    s.add(number("hsv_v", 0.4, 0, 1, "value gain", aug));
    s.add(number("fliplr", 0.5, 0, 1, "probability of a horizontal flip", aug));
    s.add(number("flipud", 0.0, 0, 1, "probability of a vertical flip", aug));

    const std::string val = "val";
    s.add(number("conf", 0.001, 0, 1, "validation confidence threshold", val));
    s.add(number("iou", 0.7, 0, 1, "validation NMS IoU threshold", val));
    s.add(integer("max_det", 300, 1, 100000, "detections kept per image", val));
    s.add(integer("val_batch", 0, 0, 65536, "validation batch size (0: twice batch)", val));
    s.add(number("box", 7.5, 0, 1000, "box (CIoU) loss gain", "loss"));
    s.add(number("cls", 0.5, 0, 1000, "class (BCE) loss gain", "loss"));
    s.add(number("dfl", 1.5, 0, 1000, "distribution focal loss gain", "loss"));
    return s;
}

}  // namespace crucible::detect
