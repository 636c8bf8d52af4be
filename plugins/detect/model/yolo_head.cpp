#include "plugins/detect/model/yolo_head.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/base/error.h"
#include "core/engine/channel_cat.h"
#include "core/engine/fused_kernels.h"
#include "plugins/detect/model/dfl_simd.h"

namespace crucible::detect {

namespace {

// The distance between consecutive rows of 4 x 16 logits when every leading dimension of `t`
// collapses into one uniform stride and the last is dense (the box part of the loss's
// [B, A, 4 * 16 + nc] predictions is such a tensor); else nullopt.
std::optional<std::int64_t> uniform_row_stride(const torch::Tensor& t) {
    const std::int64_t k = t.dim();
    if (k < 2 || t.stride(k - 1) != 1 || t.size(k - 1) != 4 * kDflSimdBins) return std::nullopt;
    for (std::int64_t i = 0; i + 2 < k; ++i)
        if (t.size(i) > 1 && t.stride(i) != t.stride(i + 1) * t.size(i + 1)) return std::nullopt;
    if (t.size(k - 2) > 1 && t.stride(k - 2) < 4 * kDflSimdBins) return std::nullopt;
    return t.stride(k - 2);
}

// Rows between which the kernels split their work.
constexpr std::int64_t kDflRowGrain = 256;

// dfl_expectation in one pass forward and one backward (dfl_simd.h) instead of LibTorch's
// softmax, product and sum with their copies: about 10 ms of a 320 px YOLOv8n step. The input
// must have a uniform_row_stride.
struct DflExpectationFunction : torch::autograd::Function<DflExpectationFunction> {
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                                 const torch::Tensor& logits) {
        const std::int64_t rows = logits.numel() / (4 * kDflSimdBins);
        const std::int64_t stride = uniform_row_stride(logits).value();
        auto sizes = logits.sizes().vec();
        sizes.back() = 4;
        auto distances = torch::empty(sizes, logits.options());
        const float* in = logits.data_ptr<float>();
        float* out = distances.data_ptr<float>();
        at::parallel_for(0, rows, kDflRowGrain, [&](std::int64_t b, std::int64_t e) {
            dfl_expectation_avx512(in, stride, b, e, out);
        });
        ctx->save_for_backward({logits, distances});
        return distances;
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads) {
        if (!grads[0].defined()) return {torch::Tensor()};
        const auto saved = ctx->get_saved_variables();
        const torch::Tensor& logits = saved[0];
        const torch::Tensor& distances = saved[1];
        const auto grad = grads[0].to(torch::kFloat32).contiguous();
        const std::int64_t rows = logits.numel() / (4 * kDflSimdBins);
        const std::int64_t stride = uniform_row_stride(logits).value();
        auto grad_logits = torch::empty(logits.sizes(), logits.options());
        const float* in = logits.data_ptr<float>();
        const float* d = distances.data_ptr<float>();
        const float* g = grad.data_ptr<float>();
        float* out = grad_logits.data_ptr<float>();
        at::parallel_for(0, rows, kDflRowGrain, [&](std::int64_t b, std::int64_t e) {
            dfl_expectation_backward_avx512(in, stride, d, g, b, e, out);
        });
        return {grad_logits};
    }
};

}  // namespace

Anchors make_anchors(const std::vector<torch::Tensor>& levels, const std::vector<double>& strides,
                     double offset) {
    if (levels.size() != strides.size()) {
        throw Error("make_anchors: " + std::to_string(levels.size()) + " levels but " +
                    std::to_string(strides.size()) + " strides");
    }
    if (levels.empty()) throw Error("make_anchors: no levels");
    auto dtype = levels[0].scalar_type();
    if (!at::isFloatingType(dtype)) dtype = torch::kFloat;
    const auto opts = torch::TensorOptions().dtype(dtype).device(levels[0].device());
    std::vector<torch::Tensor> points;
    std::vector<torch::Tensor> stride_parts;
    for (size_t i = 0; i < levels.size(); ++i) {
        const int64_t h = levels[i].size(-2);
        const int64_t w = levels[i].size(-1);
        auto sx = torch::arange(w, opts) + offset;
        auto sy = torch::arange(h, opts) + offset;
        auto xx = sx.view({1, w}).expand({h, w});
        auto yy = sy.view({h, 1}).expand({h, w});
        points.push_back(torch::stack({xx, yy}, -1).reshape({h * w, 2}));
        stride_parts.push_back(torch::full({h * w, 1}, strides[i], opts));
    }
    return Anchors{torch::cat(points, 0), torch::cat(stride_parts, 0)};
}

torch::Tensor dfl_expectation(const torch::Tensor& logits, int64_t reg_max) {
    auto sizes = logits.sizes().vec();
    const int64_t last = sizes.back();
    if (last != 4 * reg_max) {
        throw Error("dfl_expectation: last dimension " + std::to_string(last) + " != 4*" +
                    std::to_string(reg_max));
    }
    if (reg_max == kDflSimdBins && logits.device().is_cpu() &&
        logits.scalar_type() == torch::kFloat32 && logits.numel() > 0 &&
        engine::fused_cpu_kernels_enabled() && dfl_simd_available()) {
        return DflExpectationFunction::apply(uniform_row_stride(logits) ? logits
                                                                        : logits.contiguous());
    }
    sizes.back() = 4;
    sizes.push_back(reg_max);  // [..., 4, reg_max]
    auto probs = logits.reshape(sizes).softmax(-1);
    auto bins = torch::arange(reg_max, logits.options());
    return (probs * bins).sum(-1);
}

torch::Tensor distances_to_xyxy(const torch::Tensor& distances, const torch::Tensor& points) {
    auto lt = distances.narrow(-1, 0, 2);
    auto rb = distances.narrow(-1, 2, 2);
    return torch::cat({points - lt, points + rb}, -1);
}

torch::Tensor distances_to_xywh(const torch::Tensor& distances, const torch::Tensor& points) {
    auto x1y1 = points - distances.narrow(-1, 0, 2);
    auto x2y2 = points + distances.narrow(-1, 2, 2);
    return torch::cat({(x1y1 + x2y2) / 2, x2y2 - x1y1}, -1);
}

DFLImpl::DFLImpl(int64_t reg_max_) : reg_max(reg_max_) {
    conv = register_module("conv",
                           torch::nn::Conv2d(torch::nn::Conv2dOptions(reg_max, 1, 1).bias(false)));
    conv->weight.set_requires_grad(false);
    reset_bins();
}

void DFLImpl::reset_bins() {
    torch::NoGradGuard no_grad;
    conv->weight.copy_(torch::arange(reg_max, conv->weight.options()).view({1, reg_max, 1, 1}));
}

torch::Tensor DFLImpl::forward(const torch::Tensor& box_logits) {
    const int64_t b = box_logits.size(0);
    const int64_t a = box_logits.size(2);
    auto probs = box_logits.reshape({b, 4, reg_max, a}).softmax(2);
    auto bins = conv->weight.reshape({1, 1, reg_max, 1}).to(probs.scalar_type());
    return (probs * bins).sum(2);
}

namespace {

torch::nn::Sequential make_branch(int64_t in_channels, int64_t hidden, int64_t out_channels) {
    return torch::nn::Sequential(
        Conv(ConvOptions(in_channels, hidden, 3)), Conv(ConvOptions(hidden, hidden, 3)),
        torch::nn::Conv2d(torch::nn::Conv2dOptions(hidden, out_channels, 1)));
}

}  // namespace

DetectImpl::DetectImpl(const DetectOptions& opts) : options(opts) {
    const auto& ch = opts.in_channels();
    if (ch.empty() || ch.size() != opts.strides().size()) {
        throw Error("Detect: " + std::to_string(ch.size()) + " input levels but " +
                    std::to_string(opts.strides().size()) + " strides");
    }
    if (opts.num_classes() < 1) throw Error("Detect: num_classes must be at least 1");
    const int64_t reg_max = opts.reg_max();
    const int64_t c2 = std::max<int64_t>({16, ch[0] / 4, reg_max * 4});
    const int64_t c3 = std::max<int64_t>(ch[0], std::min<int64_t>(opts.num_classes(), 100));
    cv2 = register_module("cv2", torch::nn::ModuleList());
    cv3 = register_module("cv3", torch::nn::ModuleList());
    for (int64_t c : ch) {
        auto box = make_branch(c, c2, 4 * reg_max);
        auto cls = make_branch(c, c3, opts.num_classes());
        cv2->push_back(box);
        cv3->push_back(cls);
        box_branches.push_back(box);
        class_branches.push_back(cls);
    }
    dfl = register_module("dfl", DFL(reg_max));
    initialize_biases();
}

void DetectImpl::initialize_biases() {
    torch::NoGradGuard no_grad;
    const double nc = static_cast<double>(options.num_classes());
    for (size_t i = 0; i < box_branches.size(); ++i) {
        const double stride = options.strides()[i];
        auto box_conv = box_branches[i]->ptr(2)->as<torch::nn::Conv2d>();
        auto cls_conv = class_branches[i]->ptr(2)->as<torch::nn::Conv2d>();
        box_conv->bias.fill_(1.0);
        cls_conv->bias.fill_(std::log(5.0 / nc / std::pow(640.0 / stride, 2)));
    }
}

std::vector<torch::Tensor> DetectImpl::forward(const std::vector<torch::Tensor>& features) {
    if (features.size() != box_branches.size()) {
        throw Error("Detect: expected " + std::to_string(box_branches.size()) +
                    " feature maps, got " + std::to_string(features.size()));
    }
    std::vector<torch::Tensor> levels;
    levels.reserve(features.size());
    for (size_t i = 0; i < features.size(); ++i) {
        // Both parts come from a plain convolution, whose backward wants a dense gradient.
        levels.push_back(engine::cat_channels(
            {box_branches[i]->forward(features[i]), class_branches[i]->forward(features[i])},
            engine::CatGrads::Dense));
    }
    return levels;
}

torch::Tensor DetectImpl::decode(const std::vector<torch::Tensor>& levels) {
    const int64_t b = levels.at(0).size(0);
    const int64_t no = outputs_per_anchor();
    const int64_t nbox = 4 * options.reg_max();
    std::vector<torch::Tensor> flat;
    for (const auto& level : levels)
        flat.push_back(level.reshape({b, no, -1}));
    auto all = torch::cat(flat, 2);  // [B, no, A]
    auto anchors = make_anchors(levels, options.strides());
    auto distances = dfl->forward(all.narrow(1, 0, nbox));        // [B, 4, A]
    auto points = anchors.points.transpose(0, 1).unsqueeze(0);    // [1, 2, A]
    auto strides = anchors.strides.transpose(0, 1).unsqueeze(0);  // [1, 1, A]
    auto x1y1 = points - distances.narrow(1, 0, 2);
    auto x2y2 = points + distances.narrow(1, 2, 2);
    auto boxes = torch::cat({(x1y1 + x2y2) / 2, x2y2 - x1y1}, 1) * strides;
    return torch::cat({boxes, all.narrow(1, nbox, options.num_classes()).sigmoid()}, 1);
}

}  // namespace crucible::detect
