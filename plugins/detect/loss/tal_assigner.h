#pragma once
// Task-aligned assigner of YOLOv8 (SPECS.md "YOLOv8 detector", Loss), fully vectorized over
// batch x ground truths x anchors.
//
// For each ground-truth box (GT): the candidates are the anchors whose centre lies strictly
// inside it; each candidate gets align = score^alpha * IoU^beta (score = predicted probability
// of the GT's class, IoU = CIoU of predicted and GT box clamped at 0); the top-k candidates by
// align are positives. An anchor claimed by several GTs goes to the GT with the highest IoU.
// Target score = one-hot class x (align * max IoU of that GT / max align of that GT).
#include <torch/torch.h>

#include <cstdint>

namespace crucible::detect {

struct AssignerOptions {
    explicit AssignerOptions(int64_t num_classes) : num_classes_(num_classes) {}
    TORCH_ARG(int64_t, num_classes);
    TORCH_ARG(int64_t, topk) = 10;
    TORCH_ARG(double, alpha) = 0.5;
    TORCH_ARG(double, beta) = 6.0;
    TORCH_ARG(double, eps) = 1e-9;
};

struct Assignment {
    torch::Tensor target_labels;    // [B, A] int64 (class of the assigned GT; 0 for background)
    torch::Tensor target_boxes;     // [B, A, 4] x1, y1, x2, y2 of the assigned GT (pixels)
    torch::Tensor target_scores;    // [B, A, nc] soft one-hot targets (0 for background)
    torch::Tensor foreground;       // [B, A] bool
    torch::Tensor target_gt_index;  // [B, A] int64 index of the assigned GT in its image
};

class TaskAlignedAssigner {
  public:
    explicit TaskAlignedAssigner(const AssignerOptions& options) : options_(options) {}

    // pred_scores [B, A, nc] probabilities; pred_boxes [B, A, 4] x1y1x2y2 in pixels;
    // anchor_points [A, 2] in pixels; gt_labels [B, M, 1]; gt_boxes [B, M, 4] x1y1x2y2 pixels;
    // gt_mask [B, M, 1] (true for real GTs, false for padding). No gradient flows.
    Assignment assign(const torch::Tensor& pred_scores, const torch::Tensor& pred_boxes,
                      const torch::Tensor& anchor_points, const torch::Tensor& gt_labels,
                      const torch::Tensor& gt_boxes, const torch::Tensor& gt_mask) const;

    const AssignerOptions& options() const { return options_; }

  private:
    AssignerOptions options_;
};

}  // namespace crucible::detect
