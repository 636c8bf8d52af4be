// plugins/detect: YOLOv8 detection task. The task hooks are added by the engine work; the
// model, loss and validator live in the files beside this one.
namespace crucible::detect {
const char* task_id() {
    return "detect.yolo";
}
}  // namespace crucible::detect
