#pragma once
// Box helpers used by the YOLOv8 assigner and loss (all element-wise, broadcasting over the
// leading dimensions; boxes are [..., 4]).
#include <torch/torch.h>

namespace crucible::detect {

// cx, cy, w, h -> x1, y1, x2, y2.
torch::Tensor xywh_to_xyxy(const torch::Tensor& boxes);

// Complete IoU of boxes `a` and `b` (x1, y1, x2, y2), broadcast against each other -> [...].
// IoU minus the normalized centre distance (rho^2 / c^2, c the diagonal of the enclosing box)
// minus the aspect-ratio term v * alpha, where v = 4/pi^2 (atan(w_b/h_b) - atan(w_a/h_a))^2 and
// alpha = v / (v - IoU + 1 + eps) is treated as a constant (no gradient). `eps` (1e-7) is added
// to the heights, the union and c^2, as the reference does.
torch::Tensor complete_iou(const torch::Tensor& a, const torch::Tensor& b, double eps = 1e-7);

}  // namespace crucible::detect
