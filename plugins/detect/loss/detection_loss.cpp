#include "plugins/detect/loss/detection_loss.h"

#include <torch/torch.h>

#include <string>

#include "core/base/error.h"
#include "core/base/shape_text.h"
#include "plugins/detect/loss/box_iou.h"

namespace crucible::detect {

namespace F = torch::nn::functional;

namespace {}  // namespace

PaddedTargets pad_targets(const DetectionTargets& targets, int64_t batch_size, double image_w,
                          double image_h, const torch::Device& device) {
    const auto fopts = torch::TensorOptions().dtype(torch::kFloat).device(device);
    const auto lopts = torch::TensorOptions().dtype(torch::kLong).device(device);
    const int64_t n = targets.boxes.defined() ? targets.boxes.size(0) : 0;
    if (n == 0) {
        return PaddedTargets{torch::zeros({batch_size, 0, 1}, fopts),
                             torch::zeros({batch_size, 0, 4}, fopts),
                             torch::zeros({batch_size, 0, 1}, lopts.dtype(torch::kBool))};
    }
    if (targets.boxes.dim() != 2 || targets.boxes.size(1) != 4) {
        throw Error("detection loss: target boxes must be [N, 4], got " +
                    shape_text(targets.boxes.sizes()));
    }
    if (!targets.batch_index.defined() || targets.batch_index.numel() != n ||
        !targets.classes.defined() || targets.classes.numel() != n) {
        throw Error("detection loss: batch_index and classes must have one entry per box (" +
                    std::to_string(n) + ")");
    }
    auto batch_index = targets.batch_index.reshape({n}).to(lopts);
    auto classes = targets.classes.reshape({n}).to(fopts);
    auto boxes = targets.boxes.to(fopts);
    if (batch_index.min().item<int64_t>() < 0 || batch_index.max().item<int64_t>() >= batch_size) {
        throw Error("detection loss: batch_index out of range [0, " + std::to_string(batch_size) +
                    ")");
    }

    auto counts = torch::bincount(batch_index, {}, batch_size);
    const int64_t m = counts.max().item<int64_t>();
    // Position of each row inside its image, keeping the input order (stable sort).
    auto sorted = torch::sort(batch_index, /*stable=*/true, /*dim=*/0, /*descending=*/false);
    auto sorted_batch = std::get<0>(sorted);
    auto order = std::get<1>(sorted);
    auto starts = counts.cumsum(0) - counts;
    auto slot = torch::arange(n, lopts) - starts.index({sorted_batch});

    auto scale = torch::tensor({image_w, image_h, image_w, image_h}, fopts);
    auto xyxy = xywh_to_xyxy(boxes.index({order}) * scale);
    auto labels = torch::zeros({batch_size, m, 1}, fopts);
    auto padded = torch::zeros({batch_size, m, 4}, fopts);
    labels.index_put_({sorted_batch, slot}, classes.index({order}).unsqueeze(-1));
    padded.index_put_({sorted_batch, slot}, xyxy);
    auto mask = padded.sum(-1, /*keepdim=*/true) > 0;
    return PaddedTargets{labels, padded, mask};
}

DetectionLoss::DetectionLoss(const DetectionLossOptions& options)
    : options_(options),
      assigner_(AssignerOptions(options.num_classes())
                    .topk(options.topk())
                    .alpha(options.alpha())
                    .beta(options.beta())) {
    if (options.num_classes() < 1) throw Error("detection loss: num_classes must be at least 1");
}

DetectionLossResult DetectionLoss::operator()(const std::vector<torch::Tensor>& levels_in,
                                              const DetectionTargets& targets) const {
    const int64_t nc = options_.num_classes();
    const int64_t reg_max = options_.reg_max();
    const int64_t no = 4 * reg_max + nc;
    const auto& strides = options_.strides();
    if (levels_in.size() != strides.size()) {
        throw Error("detection loss: expected " + std::to_string(strides.size()) +
                    " level maps, got " + std::to_string(levels_in.size()));
    }
    std::vector<torch::Tensor> levels;
    std::vector<torch::Tensor> flat;
    const int64_t b = levels_in[0].size(0);
    for (const auto& level : levels_in) {
        if (level.dim() != 4 || level.size(0) != b || level.size(1) != no) {
            throw Error("detection loss: level map " + shape_text(level.sizes()) + " is not [" +
                        std::to_string(b) + ", " + std::to_string(no) + ", H, W]");
        }
        levels.push_back(level.to(torch::kFloat));
        flat.push_back(levels.back().flatten(2).transpose(1, 2));
    }
    // [B, A, no], contiguous: a channels-last map is [B, H*W, no] in memory, so the cat copies
    // blocks instead of transposing (and dfl_expectation reads the box logits in place).
    auto all = torch::cat(flat, 1);
    // One split, not two narrows: its backward writes both gradients into one tensor, where each
    // narrow's would zero a tensor of `all`'s size and the two would then be added.
    const auto parts = all.split_with_sizes({4 * reg_max, nc}, -1);
    const auto& pred_distri = parts[0];
    const auto& pred_scores = parts[1];

    const auto device = all.device();
    auto anchors = make_anchors(levels, strides, 0.5);  // grid units, [A, 2] / [A, 1]
    const double image_h = static_cast<double>(levels[0].size(2)) * strides[0];
    const double image_w = static_cast<double>(levels[0].size(3)) * strides[0];

    auto gt = pad_targets(targets, b, image_w, image_h, device);
    if (gt.labels.numel() > 0) {
        const double lo = gt.labels.min().item<double>();
        const double hi = gt.labels.max().item<double>();
        if (lo < 0 || hi >= static_cast<double>(nc)) {
            throw Error("detection loss: class index out of range [0, " + std::to_string(nc) + ")");
        }
    }

    // Predicted boxes x1y1x2y2 in grid units of each anchor's level.
    auto pred_boxes =
        distances_to_xyxy(dfl_expectation(pred_distri, reg_max), anchors.points.unsqueeze(0));

    auto assignment =
        assigner_.assign(pred_scores.detach().sigmoid(), pred_boxes.detach() * anchors.strides,
                         anchors.points * anchors.strides, gt.labels, gt.boxes, gt.mask);

    auto target_scores_sum =
        assignment.target_scores.sum().clamp_min(options_.min_target_scores_sum());

    auto loss_cls = F::binary_cross_entropy_with_logits(
                        pred_scores, assignment.target_scores,
                        F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone))
                        .sum() /
                    target_scores_sum;

    auto fg = assignment.foreground;
    const int64_t n_fg = fg.sum().item<int64_t>();
    torch::Tensor loss_box = torch::zeros({}, all.options());
    torch::Tensor loss_dfl = torch::zeros({}, all.options());
    if (n_fg > 0) {
        auto target_boxes = assignment.target_boxes / anchors.strides;  // grid units
        auto weight = assignment.target_scores.sum(-1).index({fg});     // [n]
        auto iou = complete_iou(pred_boxes.index({fg}), target_boxes.index({fg}));
        loss_box = ((1.0 - iou) * weight).sum() / target_scores_sum;

        // DFL: target distances (clamped to reg_max - 1 - 0.01) split between the two
        // neighbouring bins; cross-entropy of each, weighted linearly, mean over the 4 sides.
        auto points = anchors.points.unsqueeze(0);
        auto target_ltrb = torch::cat({points - target_boxes.narrow(-1, 0, 2),
                                       target_boxes.narrow(-1, 2, 2) - points},
                                      -1)
                               .index({fg})
                               .clamp(0, static_cast<double>(reg_max - 1) - 0.01);  // [n, 4]
        auto log_probs =
            pred_distri.index({fg}).reshape({n_fg, 4, reg_max}).log_softmax(-1);  // [n, 4, R]
        auto left = target_ltrb.to(torch::kLong);
        auto right = left + 1;
        auto weight_left = right.to(torch::kFloat) - target_ltrb;
        auto weight_right = 1.0 - weight_left;
        auto ce_left = -log_probs.gather(-1, left.unsqueeze(-1)).squeeze(-1);
        auto ce_right = -log_probs.gather(-1, right.unsqueeze(-1)).squeeze(-1);
        auto dfl = (ce_left * weight_left + ce_right * weight_right).mean(-1);  // [n]
        loss_dfl = (dfl * weight).sum() / target_scores_sum;
    }

    loss_box = loss_box * options_.box_gain();
    loss_cls = loss_cls * options_.cls_gain();
    loss_dfl = loss_dfl * options_.dfl_gain();
    DetectionLossResult result;
    result.total = (loss_box + loss_cls + loss_dfl) * static_cast<double>(b);
    result.items = torch::stack({loss_box, loss_cls, loss_dfl}).detach();
    result.foreground = n_fg;
    result.target_scores_sum = target_scores_sum.detach();
    return result;
}

}  // namespace crucible::detect
