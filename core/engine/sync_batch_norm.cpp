#include "core/engine/sync_batch_norm.h"

#include <cstdint>

#include "core/engine/batch_norm_running.h"

namespace crucible::engine {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Per-channel view of a [C] tensor against an [N, C, ...] input.
torch::Tensor per_channel(const torch::Tensor& t, std::int64_t dims) {
    std::vector<std::int64_t> shape(static_cast<std::size_t>(dims), 1);
    shape[1] = t.size(0);
    return t.view(shape);
}

std::vector<std::int64_t> reduced_dims(const torch::Tensor& x) {
    std::vector<std::int64_t> dims = {0};
    for (std::int64_t d = 2; d < x.dim(); ++d)
        dims.push_back(d);
    return dims;
}

// The collective travels through the autograd context as an integer: AutogradContext keeps
// IValues only, and the Collective outlives every step.
std::int64_t as_handle(Collective* c) {
    return static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(c));
}
Collective& from_handle(std::int64_t h) {
    return *reinterpret_cast<Collective*>(static_cast<std::intptr_t>(h));
}

struct SyncBatchNormFunction : torch::autograd::Function<SyncBatchNormFunction> {
    // Returns the normalized output; `stats` receives the global mean and biased variance (for
    // the running statistics) and the global count.
    static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor weight,
                                 torch::Tensor bias, double eps, std::int64_t collective,
                                 torch::Tensor stats) {
        const auto dims = reduced_dims(x);
        const std::int64_t channels = x.size(1);
        const double local_count =
            static_cast<double>(x.numel() / std::max<std::int64_t>(channels, 1));
        // Sums in double: the variance below is a difference of two of them.
        const torch::Tensor xd = x.to(torch::kFloat64);
        torch::Tensor sums = torch::cat({xd.sum(dims), (xd * xd).sum(dims),
                                         torch::full({1}, local_count, xd.options())})
                                 .cpu();
        from_handle(collective).sum(sums);
        const double count = sums[2 * channels].item<double>();
        const torch::Tensor mean = sums.narrow(0, 0, channels) / count;
        const torch::Tensor var =
            (sums.narrow(0, channels, channels) / count - mean * mean).clamp_min(0);
        const torch::Tensor invstd = torch::rsqrt(var + eps);
        stats.copy_(torch::cat({mean, var, torch::full({1}, count, mean.options())}));

        const torch::Tensor mean_x = mean.to(x.device()).to(x.scalar_type());
        const torch::Tensor invstd_x = invstd.to(x.device()).to(x.scalar_type());
        const std::int64_t nd = x.dim();
        torch::Tensor scale = invstd_x;
        if (weight.defined()) scale = scale * weight;
        torch::Tensor y = (x - per_channel(mean_x, nd)) * per_channel(scale, nd);
        if (bias.defined()) y = y + per_channel(bias, nd);
        ctx->save_for_backward({x, weight, mean_x, invstd_x});
        ctx->saved_data["collective"] = collective;
        ctx->saved_data["count"] = count;
        return y;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const auto saved = ctx->get_saved_variables();
        const torch::Tensor& x = saved[0];
        const torch::Tensor& weight = saved[1];
        const torch::Tensor& mean = saved[2];
        const torch::Tensor& invstd = saved[3];
        Collective& collective = from_handle(ctx->saved_data["collective"].toInt());
        const double count = ctx->saved_data["count"].toDouble();
        const torch::Tensor dy = grads[0];
        const auto dims = reduced_dims(x);
        const std::int64_t nd = x.dim();
        const std::int64_t channels = x.size(1);
        const torch::Tensor xmu = x - per_channel(mean, nd);
        const torch::Tensor sum_dy = dy.sum(dims);
        const torch::Tensor sum_dy_xmu = (dy * xmu).sum(dims);
        // The parameters' gradients from this rank's images (the reducer averages them).
        const torch::Tensor grad_weight = weight.defined() ? sum_dy_xmu * invstd : torch::Tensor();
        const torch::Tensor grad_bias = sum_dy;
        torch::Tensor global = torch::cat({sum_dy, sum_dy_xmu}).to(torch::kFloat64).cpu();
        collective.sum(global);
        global = global.to(x.device()).to(x.scalar_type());
        const torch::Tensor mean_dy = global.narrow(0, 0, channels) / count;
        const torch::Tensor mean_dy_xmu = global.narrow(0, channels, channels) / count;
        torch::Tensor scale = invstd;
        if (weight.defined()) scale = scale * weight;
        const torch::Tensor dx =
            (dy - per_channel(mean_dy, nd) - xmu * per_channel(invstd * invstd * mean_dy_xmu, nd)) *
            per_channel(scale, nd);
        return {dx, grad_weight, grad_bias, torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

}  // namespace

torch::Tensor sync_batch_norm(const torch::Tensor& x, torch::nn::BatchNorm2dImpl& bn,
                              Collective& collective) {
    if (!bn.is_training()) return bn.forward(x);
    const auto& o = bn.options;
    torch::Tensor stats = torch::empty({2 * x.size(1) + 1}, torch::kFloat64);
    const torch::Tensor y = SyncBatchNormFunction::apply(
        x, o.affine() ? bn.weight : torch::Tensor(), o.affine() ? bn.bias : torch::Tensor(),
        o.eps(), as_handle(&collective), stats);
    const std::int64_t c = x.size(1);
    update_running_statistics(bn, stats.narrow(0, 0, c), stats.narrow(0, c, c),
                              stats[2 * c].item<double>());
    return y;
}

}  // namespace crucible::engine
