#include "plugins/llm_lora/linear_cross_entropy.h"

#include <algorithm>

#include "core/base/error.h"

namespace crucible::llm {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr std::int64_t kChunkLogits = std::int64_t{4} << 20;  // fp32 values: 16 MB a chunk

struct HeadGrads {
    torch::Tensor hidden, weight;  // undefined where not wanted
};

// The loss, and where wanted the gradients of the mean loss. Every step stays on the inputs'
// device without a host sync (the token count is a tensor).
torch::Tensor chunked_loss(const torch::Tensor& hidden, const torch::Tensor& weight,
                           const torch::Tensor& target, std::int64_t ignore_index,
                           std::int64_t chunk_rows, bool want_hidden, bool want_weight,
                           HeadGrads* grads) {
    const std::int64_t n = hidden.size(0), vocab = weight.size(0);
    const auto f32 = hidden.options().dtype(torch::kFloat32);
    const torch::Tensor valid = target.ne(ignore_index);
    // gather and scatter need an index in range; the ignored rows' gradients are zeroed below.
    const torch::Tensor safe_target = target.masked_fill(valid.logical_not(), 0).unsqueeze(1);
    const torch::Tensor keep = valid.to(torch::kFloat32).unsqueeze(1);  // [N, 1], 1 or 0
    const std::int64_t rows =
        std::min(std::max<std::int64_t>(n, 1),
                 chunk_rows > 0 ? chunk_rows : std::max<std::int64_t>(1, kChunkLogits / vocab));
    const bool want_grad = want_hidden || want_weight;
    if (want_hidden) grads->hidden = torch::empty_like(hidden);
    if (want_weight) grads->weight = torch::zeros(weight.sizes(), f32);
    const torch::Tensor minus_one = want_grad ? torch::full({rows, 1}, -1.0, f32) : torch::Tensor();
    // Reused by every chunk: the logits (fp32 weights write them in place) and log-probabilities.
    const bool fp32_logits =
        weight.scalar_type() == torch::kFloat32 && hidden.scalar_type() == torch::kFloat32;
    torch::Tensor logits_buffer = fp32_logits ? torch::empty({rows, vocab}, f32) : torch::Tensor();
    torch::Tensor log_probs = torch::empty({rows, vocab}, f32);
    torch::Tensor loss_sum = torch::zeros({}, f32);
    for (std::int64_t start = 0; start < n; start += rows) {
        const std::int64_t count = std::min(rows, n - start);
        const torch::Tensor h = hidden.narrow(0, start, count);
        const torch::Tensor t = safe_target.narrow(0, start, count);
        const torch::Tensor k = keep.narrow(0, start, count);
        torch::Tensor lp = log_probs.narrow(0, 0, count);
        torch::Tensor logits;
        if (fp32_logits) {
            logits = logits_buffer.narrow(0, 0, count);
            at::mm_out(logits, h, weight.t());
        } else {
            logits = torch::mm(h, weight.t()).to(torch::kFloat32);
        }
        at::_log_softmax_out(lp, logits, 1, false);
        loss_sum.sub_((lp.gather(1, t) * k).sum());
        if (!want_grad) continue;
        // d loss_row / d logits = softmax - one_hot(target), in place of the log-probabilities.
        torch::Tensor d_logits = lp.exp_().scatter_add_(1, t, minus_one.narrow(0, 0, count));
        if (want_hidden)
            grads->hidden.narrow(0, start, count)
                .copy_(torch::mm(d_logits.to(weight.scalar_type()), weight) * k);
        if (want_weight) grads->weight.addmm_(d_logits.t(), h.to(torch::kFloat32) * k);
    }
    const torch::Tensor tokens = valid.sum().to(torch::kFloat32);
    const torch::Tensor inverse = 1.0 / tokens.clamp_min(1);
    if (want_hidden) grads->hidden.mul_(inverse);
    if (want_weight) grads->weight = grads->weight.mul_(inverse).to(weight.scalar_type());
    return loss_sum / tokens;
}

// The gradients are made in forward; backward scales them by the loss's incoming gradient.
struct LinearCrossEntropyFunction : torch::autograd::Function<LinearCrossEntropyFunction> {
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& hidden,
                                 const torch::Tensor& weight, const torch::Tensor& target,
                                 std::int64_t ignore_index, std::int64_t chunk_rows) {
        HeadGrads grads;
        torch::Tensor loss = chunked_loss(hidden, weight, target, ignore_index, chunk_rows,
                                          hidden.requires_grad(), weight.requires_grad(), &grads);
        ctx->saved_data["hidden"] = grads.hidden;
        ctx->saved_data["weight"] = grads.weight;
        return loss;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
        const torch::Tensor& g = grad_outputs[0];
        const torch::Tensor hidden = ctx->saved_data["hidden"].toTensor();
        const torch::Tensor weight = ctx->saved_data["weight"].toTensor();
        return {hidden.defined() ? hidden * g : torch::Tensor(),
                weight.defined() ? weight * g : torch::Tensor(), torch::Tensor(), torch::Tensor(),
                torch::Tensor()};
    }
};

}  // namespace

torch::Tensor linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                   const torch::Tensor& target, std::int64_t ignore_index,
                                   std::int64_t chunk_rows) {
    if (hidden.dim() != 2 || weight.dim() != 2 || hidden.size(1) != weight.size(1))
        throw Error("linear_cross_entropy: hidden [N, H] and weight [V, H] expected, got " +
                    std::to_string(hidden.dim()) + "-d and " + std::to_string(weight.dim()) +
                    "-d tensors that do not match");
    if (target.dim() != 1 || target.size(0) != hidden.size(0) ||
        target.scalar_type() != torch::kLong)
        throw Error("linear_cross_entropy: target must be int64 [N] with N = hidden's rows");
    if (!torch::GradMode::is_enabled()) {
        HeadGrads none;
        return chunked_loss(hidden, weight, target, ignore_index, chunk_rows, false, false, &none);
    }
    return LinearCrossEntropyFunction::apply(hidden, weight, target, ignore_index, chunk_rows);
}

}  // namespace crucible::llm
