#include "plugins/detect/task/detect_schema.h"

#include <string>

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

    const std::string aug = "augmentation";
    s.add(number_option("mosaic", 1.0, 0, 1, "probability of a 4-image mosaic", aug));
    s.add(integer_option("close_mosaic", 10, 0, 100000, "mosaic off for the last N epochs", aug));
    s.add(number_option("degrees", 0.0, 0, 180, "random rotation range (+/- degrees)", aug));
    s.add(number_option("translate", 0.1, 0, 0.9, "random translation (+/- fraction)", aug));
    s.add(number_option("scale", 0.5, 0, 0.95, "random scale gain (+/- fraction)", aug));
    s.add(number_option("shear", 0.0, 0, 90, "random shear (+/- degrees)", aug));
    s.add(number_option("perspective", 0.0, 0, 0.001, "random perspective", aug));
    s.add(number_option("hsv_h", 0.015, 0, 1, "hue gain", aug));
    s.add(number_option("hsv_s", 0.7, 0, 1, "saturation gain", aug));
    s.add(number_option("hsv_v", 0.4, 0, 1, "value gain", aug));
    s.add(number_option("fliplr", 0.5, 0, 1, "probability of a horizontal flip", aug));
    s.add(number_option("flipud", 0.0, 0, 1, "probability of a vertical flip", aug));

    const std::string val = "val";
    s.add(number_option("conf", 0.001, 0, 1, "validation confidence threshold", val));
    s.add(number_option("iou", 0.7, 0, 1, "validation NMS IoU threshold", val));
    s.add(integer_option("max_det", 300, 1, 100000, "detections kept per image", val));
    s.add(integer_option("val_batch", 0, 0, 65536, "validation batch size (0: twice batch)", val));
    s.add(number_option("box", 7.5, 0, 1000, "box (CIoU) loss gain", "loss"));
    s.add(number_option("cls", 0.5, 0, 1000, "class (BCE) loss gain", "loss"));
    s.add(number_option("dfl", 1.5, 0, 1000, "distribution focal loss gain", "loss"));
    return s;
}

}  // namespace crucible::detect
