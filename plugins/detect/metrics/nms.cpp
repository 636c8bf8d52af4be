#include "plugins/detect/metrics/nms.h"

#include <algorithm>
#include <numeric>

#include "core/base/error.h"

namespace crucible::detect {
namespace {

// Class offset that keeps boxes of different classes apart (larger than any image side we
// validate at), as the reference's class-aware NMS does.
constexpr float kClassOffset = 7680.f;

}  // namespace

torch::Tensor nms_boxes(const torch::Tensor& boxes_in, const torch::Tensor& scores_in,
                        double iou_threshold, long max_keep) {
    if (boxes_in.dim() != 2 || boxes_in.size(1) != 4)
        throw InputError("nms", "boxes must be [N, 4]");
    if (scores_in.dim() != 1 || scores_in.size(0) != boxes_in.size(0))
        throw InputError("nms", "scores must be [N] with N = boxes.size(0)");
    const auto n = static_cast<std::size_t>(boxes_in.size(0));
    auto boxes = boxes_in.detach().to(torch::kCPU, torch::kFloat).contiguous();
    auto scores = scores_in.detach().to(torch::kCPU, torch::kFloat).contiguous();
    const float* b = boxes.data_ptr<float>();
    const float* s = scores.data_ptr<float>();

    std::vector<std::int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [s](std::int64_t a, std::int64_t c) { return s[a] > s[c]; });

    // Structure of arrays in score order, so the inner loop is a plain vectorizable sweep.
    std::vector<float> x1(n), y1(n), x2(n), y2(n), area(n);
    for (std::size_t k = 0; k < n; ++k) {
        const float* r = b + 4 * order[k];
        x1[k] = r[0];
        y1[k] = r[1];
        x2[k] = r[2];
        y2[k] = r[3];
        area[k] = (r[2] - r[0]) * (r[3] - r[1]);
    }
    const float thr = static_cast<float>(iou_threshold);
    std::vector<std::uint8_t> suppressed(n, 0);
    std::vector<std::int64_t> keep;
    const std::size_t limit = max_keep < 0 ? n : static_cast<std::size_t>(max_keep);
    for (std::size_t i = 0; i < n && keep.size() < limit; ++i) {
        if (suppressed[i]) continue;
        keep.push_back(order[i]);
        const float ix1 = x1[i], iy1 = y1[i], ix2 = x2[i], iy2 = y2[i], ia = area[i];
        std::uint8_t* sup = suppressed.data();
        for (std::size_t j = i + 1; j < n; ++j) {
            const float w = std::max(0.f, std::min(ix2, x2[j]) - std::max(ix1, x1[j]));
            const float h = std::max(0.f, std::min(iy2, y2[j]) - std::max(iy1, y1[j]));
            const float inter = w * h;
            const float iou = inter / (ia + area[j] - inter);
            sup[j] = static_cast<std::uint8_t>(sup[j] | (iou > thr));
        }
    }
    return torch::tensor(keep, torch::TensorOptions().dtype(torch::kLong));
}

std::vector<torch::Tensor> non_max_suppression(const torch::Tensor& prediction,
                                               const NmsOptions& options) {
    if (prediction.dim() != 3 || prediction.size(1) < 5)
        throw InputError("prediction", "expected [batch, 4 + classes, anchors], got " +
                                           std::to_string(prediction.dim()) + " dimensions");
    torch::NoGradGuard no_grad;
    const auto pred = prediction.detach().to(torch::kFloat);
    const auto conf_thr = options.conf_threshold;
    std::vector<torch::Tensor> out;
    out.reserve(static_cast<std::size_t>(pred.size(0)));
    const auto empty = torch::zeros({0, 6}, torch::kFloat);
    for (std::int64_t bi = 0; bi < pred.size(0); ++bi) {
        const auto x = pred[bi].transpose(0, 1);  // [A, 4 + nc]
        const auto box = x.slice(1, 0, 4);
        const auto cls = x.slice(1, 4);
        torch::Tensor anchor, klass, score;
        if (options.multi_label) {
            const auto idx = (cls > conf_thr).nonzero();  // [K, 2]: anchor, class (row-major)
            anchor = idx.select(1, 0);
            klass = idx.select(1, 1);
            score = cls.index({anchor, klass});
        } else {
            auto best = cls.max(1);
            const auto keep = (std::get<0>(best) > conf_thr).nonzero().select(1, 0);
            anchor = keep;
            klass = std::get<1>(best).index_select(0, keep);
            score = std::get<0>(best).index_select(0, keep);
        }
        if (score.numel() == 0) {
            out.push_back(empty.clone());
            continue;
        }
        if (score.size(0) > options.max_candidates) {
            auto sorted = score.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true);
            const auto top = std::get<1>(sorted).slice(0, 0, options.max_candidates);
            anchor = anchor.index_select(0, top);
            klass = klass.index_select(0, top);
            score = score.index_select(0, top);
        }
        const auto b = box.index_select(0, anchor);
        const auto half_w = b.select(1, 2) / 2;
        const auto half_h = b.select(1, 3) / 2;
        const auto xyxy = torch::stack({b.select(1, 0) - half_w, b.select(1, 1) - half_h,
                                        b.select(1, 0) + half_w, b.select(1, 1) + half_h},
                                       1);
        const auto cls_f = klass.to(torch::kFloat);
        const auto offset_boxes =
            options.agnostic ? xyxy : xyxy + (cls_f * kClassOffset).unsqueeze(1);
        const auto keep = nms_boxes(offset_boxes, score, options.iou_threshold, options.max_det)
                              .to(xyxy.device());
        out.push_back(
            torch::cat({xyxy.index_select(0, keep), score.index_select(0, keep).unsqueeze(1),
                        cls_f.index_select(0, keep).unsqueeze(1)},
                       1)
                .to(torch::kCPU)
                .contiguous());
    }
    return out;
}

std::vector<PredBox> to_pred_boxes(const torch::Tensor& detections) {
    std::vector<PredBox> out;
    if (detections.numel() == 0) return out;
    if (detections.dim() != 2 || detections.size(1) != 6)
        throw InputError("detections", "expected [n, 6] (x1, y1, x2, y2, conf, cls)");
    const auto d = detections.detach().to(torch::kCPU, torch::kFloat).contiguous();
    const float* p = d.data_ptr<float>();
    out.reserve(static_cast<std::size_t>(d.size(0)));
    for (std::int64_t i = 0; i < d.size(0); ++i, p += 6)
        out.push_back({p[0], p[1], p[2], p[3], p[4], static_cast<int>(p[5])});
    return out;
}

}  // namespace crucible::detect
