#include "plugins/detect/model/yolo_blocks.h"

#include <torch/torch.h>

#include "core/engine/bn_silu.h"
#include "core/engine/sync_batch_norm.h"

namespace crucible::detect {

namespace F = torch::nn::functional;

ConvImpl::ConvImpl(const ConvOptions& opts) : options(opts) {
    conv = register_module(
        "conv", torch::nn::Conv2d(
                    torch::nn::Conv2dOptions(opts.in_channels(), opts.out_channels(), opts.kernel())
                        .stride(opts.stride())
                        .padding(opts.kernel() / 2)
                        .bias(false)));
    bn = register_module(
        "bn", torch::nn::BatchNorm2d(
                  torch::nn::BatchNorm2dOptions(opts.out_channels()).eps(1e-3).momentum(0.03)));
}

torch::Tensor ConvImpl::forward(const torch::Tensor& x) {
    const torch::Tensor y = conv->forward(x);
    if (!sync_bn) {
        if (auto fused = engine::fused_bn_silu(y, *bn)) return *fused;
    }
    return torch::silu(sync_bn ? engine::sync_batch_norm(y, *bn, *sync_bn) : bn->forward(y));
}

void enable_sync_batch_norm(torch::nn::Module& model, engine::Collective* collective) {
    for (const auto& m : model.modules())
        if (auto* conv = dynamic_cast<ConvImpl*>(m.get())) conv->sync_bn = collective;
}

BottleneckImpl::BottleneckImpl(const BottleneckOptions& opts) : options(opts) {
    cv1 = register_module("cv1", Conv(ConvOptions(opts.channels(), opts.channels(), 3)));
    cv2 = register_module("cv2", Conv(ConvOptions(opts.channels(), opts.channels(), 3)));
}

torch::Tensor BottleneckImpl::forward(const torch::Tensor& x) {
    auto y = cv2->forward(cv1->forward(x));
    return options.shortcut() ? x + y : y;
}

C2fImpl::C2fImpl(const C2fOptions& opts) : options(opts) {
    hidden = opts.out_channels() / 2;
    cv1 = register_module("cv1", Conv(ConvOptions(opts.in_channels(), 2 * hidden, 1)));
    cv2 = register_module("cv2",
                          Conv(ConvOptions((2 + opts.repeats()) * hidden, opts.out_channels(), 1)));
    m = register_module("m", torch::nn::ModuleList());
    for (int64_t i = 0; i < opts.repeats(); ++i) {
        Bottleneck block(BottleneckOptions(hidden, opts.shortcut()));
        m->push_back(block);
        blocks.push_back(block);
    }
}

torch::Tensor C2fImpl::forward(const torch::Tensor& x) {
    auto halves = cv1->forward(x).chunk(2, 1);
    std::vector<torch::Tensor> parts{halves[0], halves[1]};
    parts.reserve(2 + blocks.size());
    for (auto& block : blocks)
        parts.push_back(block->forward(parts.back()));
    return cv2->forward(torch::cat(parts, 1));
}

SPPFImpl::SPPFImpl(const SPPFOptions& opts) : options(opts) {
    const int64_t hidden = opts.in_channels() / 2;
    cv1 = register_module("cv1", Conv(ConvOptions(opts.in_channels(), hidden, 1)));
    cv2 = register_module("cv2", Conv(ConvOptions(4 * hidden, opts.out_channels(), 1)));
}

torch::Tensor SPPFImpl::forward(const torch::Tensor& x) {
    const int64_t k = options.kernel();
    auto pool = [k](const torch::Tensor& t) {
        return F::max_pool2d(t, F::MaxPool2dFuncOptions(k).stride(1).padding(k / 2));
    };
    auto y0 = cv1->forward(x);
    auto y1 = pool(y0);
    auto y2 = pool(y1);
    auto y3 = pool(y2);
    return cv2->forward(torch::cat({y0, y1, y2, y3}, 1));
}

torch::Tensor ConcatImpl::forward(const std::vector<torch::Tensor>& inputs) {
    return torch::cat(inputs, 1);
}

torch::Tensor UpsampleImpl::forward(const torch::Tensor& x) {
    return F::interpolate(x, F::InterpolateFuncOptions()
                                 .scale_factor(std::vector<double>{static_cast<double>(factor),
                                                                   static_cast<double>(factor)})
                                 .mode(torch::kNearest));
}

}  // namespace crucible::detect
