#pragma once
// The `detect.yolo` task (alias `detect`): YOLOv8 detection training on the engine. Data comes
// from the core/data loader (mosaic, affine, HSV, flips; threads, seeded), the model from
// `model=` (fresh scale, .pt or .safetensors), the loss from plugins/detect/loss, and validation
// from DetectionValidator.
namespace crucible::detect {

inline constexpr const char* kDetectTaskId = "detect.yolo";

// Keeps the registration object linked in (call from a test or a main that does not link the
// plugin whole-archive).
void ensure_detect_task_registered();

}  // namespace crucible::detect
