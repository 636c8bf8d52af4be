#pragma once
// The option schema of `detect.yolo`: the engine's training options with the SPECS.md YOLOv8
// defaults, plus data, model, image size, augmentation and validation options.
#include <string>

#include "core/base/json.h"
#include "core/base/options_schema.h"
#include "core/data/augment/augment.h"
#include "plugins/detect/metrics/nms.h"

namespace crucible::detect {

OptionSchema detect_task_schema();

// conf / iou / max_det: training's validation, `val` and `predict` share them and differ only in
// the default confidence.
void add_nms_options(OptionSchema& schema, double default_conf, const std::string& group);
NmsOptions nms_options_from(const Json& config);

// imgsz from a resolved config; InputError unless it is a multiple of the largest stride (32).
int imgsz_from(const Json& config);

// The augmentation options, with data::AugmentOptions' defaults (SPECS.md), and their reader.
void add_augment_options(OptionSchema& schema);
data::AugmentOptions augment_options_from(const Json& config);

}  // namespace crucible::detect
