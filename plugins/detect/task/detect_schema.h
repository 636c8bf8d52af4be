#pragma once
// The option schema of `detect.yolo`: the engine's training options with the SPECS.md YOLOv8
// defaults, plus data, model, image size, augmentation and validation options.
#include "core/base/options_schema.h"

namespace crucible::detect {

OptionSchema detect_task_schema();

}  // namespace crucible::detect
