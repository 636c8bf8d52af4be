#pragma once
// The YOLOv8 detection loss (SPECS.md "YOLOv8 detector", Loss): task-aligned assignment, CIoU
// box loss, distribution focal loss (DFL) and BCE class loss, gains box 7.5 / cls 0.5 /
// dfl 1.5, total multiplied by the batch size.
//
// Always computed in fp32 (the level maps are cast; no op that autocast would lower to fp16 is
// used), on the device of the level maps, with no per-anchor loops.
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "plugins/detect/loss/tal_assigner.h"
#include "plugins/detect/model/yolo_head.h"

namespace crucible::detect {

struct DetectionLossOptions {
    explicit DetectionLossOptions(int64_t num_classes) : num_classes_(num_classes) {}
    TORCH_ARG(int64_t, num_classes);
    TORCH_ARG(int64_t, reg_max) = kRegMax;
    TORCH_ARG(std::vector<double>, strides) = std::vector<double>{8.0, 16.0, 32.0};
    TORCH_ARG(double, box_gain) = 7.5;
    TORCH_ARG(double, cls_gain) = 0.5;
    TORCH_ARG(double, dfl_gain) = 1.5;
    TORCH_ARG(int64_t, topk) = 10;
    TORCH_ARG(double, alpha) = 0.5;
    TORCH_ARG(double, beta) = 6.0;
    // The losses are divided by max(target-score sum, this). A data-parallel rank divides by its
    // own sum nearly unclamped; the trainer then applies the clamp of 1 to the global sum.
    TORCH_ARG(double, min_target_scores_sum) = 1.0;
};

// Ground truth of a batch, one row per box (the Ultralytics collate layout).
struct DetectionTargets {
    torch::Tensor batch_index;  // [N] image index in the batch (any numeric dtype)
    torch::Tensor classes;      // [N] or [N, 1] class index (any numeric dtype)
    torch::Tensor boxes;        // [N, 4] cx, cy, w, h normalized to the image size
};

struct DetectionLossResult {
    torch::Tensor total;              // scalar (box + cls + dfl) * batch size, differentiable
    torch::Tensor items;              // [3] detached: box, cls, dfl (after gains)
    int64_t foreground = 0;           // number of positive anchors (for logs)
    torch::Tensor target_scores_sum;  // scalar: what the losses were divided by (on the device)
};

class DetectionLoss {
  public:
    explicit DetectionLoss(const DetectionLossOptions& options);

    // `levels`: the raw head maps [B, 4*reg_max + nc, H_i, W_i] for strides 8/16/32 of an image
    // of size (H_0 * 8, W_0 * 8) — the normalized targets refer to that size. Throws
    // crucible::Error on inconsistent shapes or out-of-range class / batch indices.
    DetectionLossResult operator()(const std::vector<torch::Tensor>& levels,
                                   const DetectionTargets& targets) const;

    const DetectionLossOptions& options() const { return options_; }

  private:
    DetectionLossOptions options_;
    TaskAlignedAssigner assigner_;
};

// Pads a batch's targets per image: labels [B, M, 1], boxes [B, M, 4] x1y1x2y2 in pixels
// (scaled by `image_wh` = (w, h)), M = the most boxes in one image; rows keep their input order.
struct PaddedTargets {
    torch::Tensor labels;
    torch::Tensor boxes;
    torch::Tensor mask;  // [B, M, 1] bool, true for real rows
};
PaddedTargets pad_targets(const DetectionTargets& targets, int64_t batch_size, double image_w,
                          double image_h, const torch::Device& device);

}  // namespace crucible::detect
