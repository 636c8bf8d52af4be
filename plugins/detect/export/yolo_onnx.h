#pragma once
// The ONNX graph of a YOLOv8 detection model (what `crucible export detect format=onnx` writes):
// input "images" [B, 3, H, W] (RGB in [0, 1], letterboxed as `crucible predict` does), output
// "output0" [B, 4 + nc, A], the raw head output in the reference exporter's layout (cx, cy, w,
// h in input pixels, then sigmoid class scores; anchors level by level, strides 8, 16, 32), or
// with nms=true one row per kept box. BatchNorm is folded into each convolution. The metadata
// carries the class names, stride, input size and batch as the reference's does, plus the names as
// JSON (`crucible_names`).
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/onnx_model.h"
#include "plugins/detect/model/yolo_model.h"

namespace crucible::detect {

struct YoloOnnxOptions {
    std::int64_t height = 640;
    std::int64_t width = 640;
    std::int64_t batch = 1;
    bool dynamic = false;  // batch, height and width chosen at run time (multiples of 32)
    bool half = false;     // fp16 weights, input and output
    std::int64_t opset = 17;
    // NMS in the graph: output0 becomes [K, 7] rows (batch, x1, y1, x2, y2, score, class).
    bool nms = false;
    double nms_conf = 0.25, nms_iou = 0.7;
    std::int64_t max_det = 300;  // per class and image (the operator's limit)
};

// The lowest opset the graph's operators allow (Softmax on one axis, Slice with inputs).
inline constexpr std::int64_t kMinYoloOpset = 13;

onnx::Model yolo_onnx_model(DetectionModelImpl& model, const std::vector<std::string>& class_names,
                            const YoloOnnxOptions& options);

// The class names as the reference writes them in its metadata: a Python dict literal,
// {0: 'person', 1: 'car'}.
std::string python_names_literal(const std::vector<std::string>& class_names);

}  // namespace crucible::detect
