#include "plugins/detect/model/yolo_blocks.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <optional>
#include <vector>

#include "core/base/error.h"
#include "core/base/shape_text.h"
#include "core/engine/bn_silu.h"
#include "core/engine/channel_cat.h"
#include "core/engine/channel_rows.h"
#include "core/engine/fused_kernels.h"
#include "core/engine/sync_batch_norm.h"
#include "plugins/detect/model/upsample_simd.h"

namespace crucible::detect {

namespace F = torch::nn::functional;

namespace {

// The input gradient straight from the output gradient's channels-last rows, a channel slice
// included (upsample_simd.h), with no dense copy first; nullopt where that kernel cannot run.
std::optional<torch::Tensor> backward_in_place(const torch::Tensor& grad,
                                               const std::vector<int64_t>& input_size,
                                               int64_t factor) {
    if (!engine::fused_cpu_kernels_enabled() || !upsample_simd_available() || grad.dim() != 4 ||
        !grad.device().is_cpu() || grad.scalar_type() != torch::kFloat32 || grad.numel() == 0)
        return std::nullopt;
    const engine::ChannelRows rows = engine::channel_rows_of(grad);
    if (rows.data == nullptr) return std::nullopt;
    const UpsampleShape shape{input_size[1], input_size[2], input_size[3], factor};
    auto grad_input =
        torch::empty(input_size, grad.options().memory_format(torch::MemoryFormat::ChannelsLast));
    float* out = grad_input.data_ptr<float>();
    at::parallel_for(0, input_size[0] * shape.in_h * shape.in_w, 256, [&](int64_t b, int64_t e) {
        upsample_nearest_backward_avx512(rows.data, rows.stride, shape, b, e, out);
    });
    return grad_input;
}

// Nearest upsampling by an integer factor. The gradient that reaches a neck upsample is a
// channel slice of the channel concatenation after it, and on such a slice LibTorch's CPU
// backward kernel runs about ten times slower than a copy and the dense kernel together (6.2
// against 0.6 + 0.7 ms at 16 x 128 x 20 x 20, channels-last). The backward reads the slice in
// place where backward_in_place can, else hands LibTorch's kernel a dense copy.
struct NearestUpsampleFunction : torch::autograd::Function<NearestUpsampleFunction> {
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                 int64_t factor) {
        const auto scale = static_cast<double>(factor);
        ctx->saved_data["input_size"] = x.sizes().vec();
        ctx->saved_data["factor"] = factor;
        ctx->saved_data["channels_last"] =
            x.suggest_memory_format() == torch::MemoryFormat::ChannelsLast;
        return at::upsample_nearest2d(x, {x.size(2) * factor, x.size(3) * factor}, scale, scale);
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads) {
        const auto input_size = ctx->saved_data["input_size"].toIntVector();
        const int64_t factor = ctx->saved_data["factor"].toInt();
        const auto scale = static_cast<double>(factor);
        const bool channels_last = ctx->saved_data["channels_last"].toBool();
        if (channels_last)
            if (auto in_place = backward_in_place(grads[0], input_size, factor))
                return {*in_place, torch::Tensor()};
        const auto dense = grads[0].contiguous(channels_last ? torch::MemoryFormat::ChannelsLast
                                                             : torch::MemoryFormat::Contiguous);
        return {
            at::upsample_nearest2d_backward(dense, {input_size[2] * factor, input_size[3] * factor},
                                            input_size, scale, scale),
            torch::Tensor()};
    }
};

}  // namespace

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
    auto halves = engine::chunk_channels(cv1->forward(x), 2);
    std::vector<torch::Tensor> parts{halves[0], halves[1]};
    parts.reserve(2 + blocks.size());
    for (auto& block : blocks)
        parts.push_back(block->forward(parts.back()));
    return cv2->forward(engine::cat_channels(parts));
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
    return cv2->forward(engine::cat_channels({y0, y1, y2, y3}));
}

torch::Tensor ConcatImpl::forward(const std::vector<torch::Tensor>& inputs) {
    return engine::cat_channels(inputs);
}

torch::Tensor UpsampleImpl::forward(const torch::Tensor& x) {
    if (x.dim() != 4) throw Error("Upsample: expected [N, C, H, W], got " + shape_text(x.sizes()));
    return NearestUpsampleFunction::apply(x, factor);
}

}  // namespace crucible::detect
