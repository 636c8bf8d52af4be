#include "plugins/detect/loss/box_iou.h"

#include <torch/torch.h>

#include <numbers>

namespace crucible::detect {

torch::Tensor xywh_to_xyxy(const torch::Tensor& boxes) {
    auto centre = boxes.narrow(-1, 0, 2);
    auto half = boxes.narrow(-1, 2, 2) / 2;
    return torch::cat({centre - half, centre + half}, -1);
}

torch::Tensor complete_iou(const torch::Tensor& a, const torch::Tensor& b, double eps) {
    auto ax1 = a.select(-1, 0), ay1 = a.select(-1, 1), ax2 = a.select(-1, 2), ay2 = a.select(-1, 3);
    auto bx1 = b.select(-1, 0), by1 = b.select(-1, 1), bx2 = b.select(-1, 2), by2 = b.select(-1, 3);
    auto wa = ax2 - ax1;
    auto ha = ay2 - ay1 + eps;
    auto wb = bx2 - bx1;
    auto hb = by2 - by1 + eps;

    auto inter = (torch::min(ax2, bx2) - torch::max(ax1, bx1)).clamp_min(0) *
                 (torch::min(ay2, by2) - torch::max(ay1, by1)).clamp_min(0);
    auto uni = wa * ha + wb * hb - inter + eps;
    auto iou = inter / uni;

    auto cw = torch::max(ax2, bx2) - torch::min(ax1, bx1);
    auto ch = torch::max(ay2, by2) - torch::min(ay1, by1);
    auto c2 = cw.pow(2) + ch.pow(2) + eps;
    auto rho2 = ((bx1 + bx2 - ax1 - ax2).pow(2) + (by1 + by2 - ay1 - ay2).pow(2)) / 4;
    constexpr double kFourOverPiSquared = 4.0 / (std::numbers::pi * std::numbers::pi);
    auto v = kFourOverPiSquared * (torch::atan(wb / hb) - torch::atan(wa / ha)).pow(2);
    torch::Tensor alpha;
    {
        torch::NoGradGuard no_grad;
        alpha = v / (v - iou + (1 + eps));
    }
    return iou - (rho2 / c2 + v * alpha);
}

}  // namespace crucible::detect
