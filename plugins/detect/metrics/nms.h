#pragma once
// Non-maximum suppression for YOLOv8 outputs as validation uses it (SPECS.md "YOLOv8 detector",
// Validation): class-aware, multi-label (a box may be kept for several classes), confidence
// threshold 0.001, IoU 0.7, at most 300 detections per image. Own implementation (no
// torchvision): candidates are selected and ordered with tensor ops on the model's device, then
// a greedy suppression over a per-class, score-ordered list computes IoU of each kept box
// against the rest in one vectorizable loop and stops after max_det kept boxes.
#include <torch/torch.h>

#include <vector>

#include "plugins/detect/metrics/detection_metrics.h"

namespace crucible::detect {

struct NmsOptions {
    double conf_threshold = 0.001;  // class scores must be > this
    double iou_threshold = 0.7;     // a box is suppressed when IoU > this with a kept box
    int max_det = 300;              // detections kept per image
    int max_candidates = 30000;     // most confident (box, class) pairs considered per image
    bool multi_label = true;        // false: each box only with its best class
    bool agnostic = false;          // true: classes suppress each other
};

// `prediction`: eval-mode output [B, 4 + nc, A] — cx, cy, w, h in pixels, then class scores (after
// sigmoid). Returns per image a float tensor [n, 6] on the CPU: x1, y1, x2, y2, conf, cls, in
// descending confidence. Throws InputError on a wrongly shaped input.
std::vector<torch::Tensor> non_max_suppression(const torch::Tensor& prediction,
                                               const NmsOptions& options = {});

// Greedy suppression alone: boxes [N, 4] (x1, y1, x2, y2), scores [N]; returns the indices of the
// kept boxes in descending score (ties keep the input order), at most `max_keep` (< 0: all).
// Boxes suppress each other when IoU > iou_threshold, regardless of class.
torch::Tensor nms_boxes(const torch::Tensor& boxes, const torch::Tensor& scores,
                        double iou_threshold, long max_keep = -1);

// One image's NMS output [n, 6] as PredBox values for DetectionStats (same pixel frame; a caller
// that letterboxed the image maps the boxes back first).
std::vector<PredBox> to_pred_boxes(const torch::Tensor& detections);

}  // namespace crucible::detect
