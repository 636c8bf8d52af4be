#pragma once
// Inference on single images (`crucible predict detect`, and val/export helpers): letterbox to
// the model's input size, eval-mode forward, NMS, boxes mapped back to the image's pixels.
#include <torch/torch.h>

#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "plugins/detect/metrics/nms.h"
#include "plugins/detect/model/yolo_model.h"
#include "plugins/detect/task/detector_functions.h"

namespace crucible::detect {

struct Detection {
    int cls = 0;
    float conf = 0;
    float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // pixels of the original image, clipped to it
};

struct PredictOptions {
    int imgsz = 640;  // multiple of 32
    NmsOptions nms{.conf_threshold = 0.25,
                   .iou_threshold = 0.7,
                   .max_det = 300,
                   .max_candidates = 30000,
                   .multi_label = false,
                   .agnostic = false};
};

// Detections of one BGR image, most confident first. The model is ready for inference (see
// load_for_inference: eval mode, on its device).
std::vector<Detection> predict_image(DetectionModelImpl& model, const cv::Mat& bgr,
                                     const PredictOptions& options);
// The same for a detector given as a function (an exported model; `options.nms` is its to use),
// fed on `device`.
std::vector<Detection> predict_image(const DetectionsForward& detector, const torch::Device& device,
                                     const cv::Mat& bgr, const PredictOptions& options);

// Draws every detection onto `image` with its class name and confidence ("circle 0.87"): what
// `crucible predict` writes and a run's validation images show.
void draw_detections(cv::Mat& image, const std::vector<Detection>& detections,
                     const std::vector<std::string>& class_names);

}  // namespace crucible::detect
