#pragma once
// The YOLOv8 Detect head (SPECS.md "YOLOv8 detector"), its anchors and the DFL decoding.
//
// Layout conventions shared by the model, the loss and the validator:
// - a level map is [B, 4*reg_max + nc, H, W]: channels 0..4*reg_max-1 are the box distribution
//   logits, side-major (left, top, right, bottom; reg_max bins each), then nc class logits;
// - anchors are enumerated level by level (strides 8, 16, 32), row-major inside a level, at the
//   cell centres (offset 0.5), in grid units of their level;
// - the decoded eval output is [B, 4 + nc, A]: cx, cy, w, h in input pixels, then sigmoid scores.
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "plugins/detect/model/yolo_blocks.h"

namespace crucible::detect {

inline constexpr int64_t kRegMax = 16;

// Anchor points of a set of level maps: `points` [A, 2] (x, y in grid units of each anchor's
// level), `strides` [A, 1]. Only the spatial sizes, dtype and device of `levels` are used.
struct Anchors {
    torch::Tensor points;
    torch::Tensor strides;
};
Anchors make_anchors(const std::vector<torch::Tensor>& levels, const std::vector<double>& strides,
                     double offset = 0.5);

// Expected distance per side from distribution logits laid out [..., 4 * reg_max] (softmax over
// each side's reg_max bins, expectation with bin values 0..reg_max-1) -> [..., 4].
torch::Tensor dfl_expectation(const torch::Tensor& logits, int64_t reg_max = kRegMax);

// Distances (left, top, right, bottom) [..., 4] from points [..., 2] -> boxes x1, y1, x2, y2.
torch::Tensor distances_to_xyxy(const torch::Tensor& distances, const torch::Tensor& points);
// Same, returning cx, cy, w, h.
torch::Tensor distances_to_xywh(const torch::Tensor& distances, const torch::Tensor& points);

// Distribution Focal Loss integral: a frozen 1x1 conv whose 16 weights are the bin values
// 0..reg_max-1 (kept in the state dict as `dfl.conv.weight`, as in the reference).
class DFLImpl : public torch::nn::Module {
  public:
    explicit DFLImpl(int64_t reg_max = kRegMax);
    // box logits [B, 4*reg_max, A] -> distances [B, 4, A].
    torch::Tensor forward(const torch::Tensor& box_logits);
    // Writes the bin values 0..reg_max-1 back into the weight (after loading a checkpoint, or
    // to repair a corrupted one).
    void reset_bins();

    int64_t reg_max = kRegMax;
    torch::nn::Conv2d conv{nullptr};
};
TORCH_MODULE(DFL);

struct DetectOptions {
    DetectOptions(int64_t num_classes, std::vector<int64_t> in_channels)
        : num_classes_(num_classes), in_channels_(std::move(in_channels)) {}
    TORCH_ARG(int64_t, num_classes);
    TORCH_ARG(std::vector<int64_t>, in_channels);  // channels of P3, P4, P5
    TORCH_ARG(int64_t, reg_max) = kRegMax;
    TORCH_ARG(std::vector<double>, strides) = std::vector<double>{8.0, 16.0, 32.0};
};

// Per level: box branch `cv2.<i>` = Conv3(c2) -> Conv3(c2) -> Conv2d 1x1 (4*reg_max), class
// branch `cv3.<i>` = Conv3(c3) -> Conv3(c3) -> Conv2d 1x1 (nc), with c2 = max(16, ch_P3/4,
// 4*reg_max) and c3 = max(ch_P3, min(nc, 100)).
class DetectImpl : public torch::nn::Module {
  public:
    explicit DetectImpl(const DetectOptions& options);

    // Raw level maps [B, 4*reg_max + nc, H_i, W_i], one per input feature map.
    std::vector<torch::Tensor> forward(const std::vector<torch::Tensor>& features);
    // Level maps -> [B, 4 + nc, A] (cx, cy, w, h in input pixels; sigmoid class scores).
    torch::Tensor decode(const std::vector<torch::Tensor>& levels);
    // Box bias 1.0; class bias log(5 / nc / (640 / stride)^2).
    void initialize_biases();

    int64_t outputs_per_anchor() const { return 4 * options.reg_max() + options.num_classes(); }

    DetectOptions options;
    torch::nn::ModuleList cv2{nullptr};
    torch::nn::ModuleList cv3{nullptr};
    DFL dfl{nullptr};
    std::vector<torch::nn::Sequential> box_branches;
    std::vector<torch::nn::Sequential> class_branches;
};
TORCH_MODULE(Detect);

}  // namespace crucible::detect
