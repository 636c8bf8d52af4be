#pragma once
// Validation images with the model's boxes drawn: what a person looks at next to the metrics
// (the studio's Samples tab shows them; DESIGN.md `sample` events name them).
#include <filesystem>
#include <string>
#include <vector>

#include "core/data/detection_types.h"
#include "core/data/image_io.h"
#include "plugins/detect/model/yolo_model.h"
#include "plugins/detect/task/predictor.h"

namespace crucible::detect {

// Runs `model` (ready for inference) on the first `count` readable images of `split` and writes
// each with its detections drawn as `dir`/NN_<stem>.jpg. Unreadable images, and images over
// `limits` (the run's max_pixels, as validation reads them), are skipped. Returns the files
// written, in order.
std::vector<std::filesystem::path> write_prediction_images(
    DetectionModelImpl& model, const data::DetectionDataset& dataset, const std::string& split,
    const PredictOptions& options, const data::ImageLimits& limits,
    const std::filesystem::path& dir, int count);

}  // namespace crucible::detect
