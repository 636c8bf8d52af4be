#pragma once
// What `model=` names, as a ready DetectionModel: a scale for a fresh model ("yolov8n",
// "yolov8s.yaml", "n"), an Ultralytics `.pt` checkpoint (read without Python, see
// plugins/detect/pretrained), or Crucible `.safetensors` weights written by a detection run
// (their metadata records the scale and the class names).
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plugins/detect/model/yolo_model.h"

namespace crucible::detect {

struct LoadedDetectionModel {
    DetectionModel model{nullptr};  // CPU, fp32, train mode
    YoloScale scale;
    std::vector<std::string> names;  // class names the weights came with (empty: fresh / unknown)
    bool pretrained = false;         // weights were loaded
    bool new_head = false;           // the class branch was re-initialised for another count
    std::string description;         // one line for the log
};

// Builds the model `model` names. `num_classes`: the class count wanted (the dataset's); when it
// differs from the weights' own, the class branch of the head is new and every other weight
// kept. A fresh model needs `num_classes`. Throws InputError("model", ...) naming the file or the
// value for anything unusable.
LoadedDetectionModel load_detection_model(const std::string& model,
                                          std::optional<std::int64_t> num_classes);

// load_detection_model with the weights' own class count, ready for inference on `device`:
// moved there, channels-last on CPU (as training and validation batches are), eval mode.
LoadedDetectionModel load_for_inference(const std::string& model, const torch::Device& device);

// Metadata Crucible writes into detection weights so that `model=best.safetensors` can rebuild the
// architecture: crucible_yolo_scale, crucible_nc, crucible_names (JSON array).
std::map<std::string, std::string> detection_weights_metadata(
    const YoloScale& scale, std::int64_t num_classes, const std::vector<std::string>& names);

}  // namespace crucible::detect
