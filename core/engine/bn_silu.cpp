#include "core/engine/bn_silu.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <vector>

#include "core/engine/batch_norm_running.h"
#include "core/engine/bn_silu_simd.h"
#include "core/engine/channel_rows.h"
#include "core/engine/fused_kernels.h"

namespace crucible::engine {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Rows between which the elementwise passes split their work.
constexpr std::int64_t kRowGrain = 256;

// Sums over all rows into 2 x channels doubles, in at most one part per thread; each part adds
// into its own array, and the parts are added at the end.
template <typename PartSum>
std::vector<double> summed_over_rows(std::int64_t rows, std::int64_t channels, PartSum part_sum) {
    const std::int64_t parts =
        std::max<std::int64_t>(1, std::min<std::int64_t>(at::get_num_threads(), rows / kRowGrain));
    std::vector<double> partial(static_cast<std::size_t>(parts * 2 * channels), 0.0);
    at::parallel_for(0, parts, 1, [&](std::int64_t first, std::int64_t last) {
        for (std::int64_t k = first; k < last; ++k) {
            double* out = partial.data() + k * 2 * channels;
            part_sum(rows * k / parts, rows * (k + 1) / parts, out, out + channels);
        }
    });
    std::vector<double> total(static_cast<std::size_t>(2 * channels), 0.0);
    for (std::int64_t k = 0; k < parts; ++k)
        for (std::int64_t i = 0; i < 2 * channels; ++i)
            total[static_cast<std::size_t>(i)] +=
                partial[static_cast<std::size_t>(k * 2 * channels + i)];
    return total;
}

// A dense channels-last float tensor that is the only user of all of its memory.
bool owns_whole_storage(const torch::Tensor& t) {
    return t.scalar_type() == torch::kFloat32 &&
           t.is_contiguous(torch::MemoryFormat::ChannelsLast) && t.use_count() == 1 &&
           t.storage().use_count() == 1 && t.storage_offset() == 0 &&
           t.storage().nbytes() == static_cast<std::size_t>(t.numel()) * sizeof(float) &&
           !t.requires_grad();
}

struct BnSiluFunction : torch::autograd::Function<BnSiluFunction> {
    // Returns silu(bn(x)); `stats` (2 x C doubles, out) receives the batch mean and the biased
    // variance for the running statistics.
    static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor weight,
                                 torch::Tensor bias, double eps, torch::Tensor stats) {
        const std::int64_t c = x.size(1);
        const std::int64_t rows = x.numel() / c;
        const ChannelRows in{x.data_ptr<float>(), c};
        const float* pivot = in.data;  // the first row: near each channel's mean
        const std::vector<double> sums =
            summed_over_rows(rows, c, [&](std::int64_t b, std::int64_t e, double* s, double* q) {
                bn_silu_stats_avx512(in, c, b, e, pivot, s, q);
            });
        // Per channel: mean, invstd, scale (weight x invstd) and shift (bias), one row each.
        auto per_channel = torch::empty({4, c}, torch::kFloat32);
        float* mp = per_channel[0].data_ptr<float>();
        float* ip = per_channel[1].data_ptr<float>();
        float* sp = per_channel[2].data_ptr<float>();
        float* hp = per_channel[3].data_ptr<float>();
        const auto w = weight.contiguous(), bi = bias.contiguous();
        const float* wp = w.data_ptr<float>();
        const float* bp = bi.data_ptr<float>();
        double* st = stats.data_ptr<double>();
        for (std::int64_t i = 0; i < c; ++i) {
            const double offset = sums[static_cast<std::size_t>(i)] / static_cast<double>(rows);
            const double m = pivot[i] + offset;
            const double var =
                std::max(0.0, sums[static_cast<std::size_t>(c + i)] / static_cast<double>(rows) -
                                  offset * offset);
            const double is = 1.0 / std::sqrt(var + eps);
            mp[i] = static_cast<float>(m);
            ip[i] = static_cast<float>(is);
            sp[i] = static_cast<float>(wp[i] * is);
            hp[i] = bp[i];
            st[i] = m;
            st[c + i] = var;
        }
        auto y = torch::empty_like(x, torch::MemoryFormat::ChannelsLast);
        float* yp = y.data_ptr<float>();
        at::parallel_for(0, rows, kRowGrain, [&](std::int64_t b, std::int64_t e) {
            bn_silu_forward_avx512(in, c, b, e, mp, sp, hp, yp);
        });
        ctx->save_for_backward({x, w, per_channel});
        return y;
    }

    // `grads` by reference: LibTorch's CppNode passes its own list, so moving dy out of it
    // leaves dy's only reference here when no other node shares it.
    static variable_list backward(AutogradContext* ctx, variable_list& grads) {
        const auto saved = ctx->get_saved_variables();
        const torch::Tensor& x = saved[0];
        const torch::Tensor& weight = saved[1];
        const std::int64_t c = x.size(1);
        const std::int64_t rows = x.numel() / c;
        torch::Tensor dy = std::move(grads[0]);
        if (!dy.defined())
            return {torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(),
                    torch::Tensor()};
        ChannelRows dy_rows =
            dy.scalar_type() == torch::kFloat32 ? channel_rows_of(dy) : ChannelRows{};
        if (dy_rows.data == nullptr) {
            dy = dy.to(torch::kFloat32).contiguous(torch::MemoryFormat::ChannelsLast);
            dy_rows = {dy.data_ptr<float>(), c};
        }
        const ChannelRows in{x.data_ptr<float>(), c};
        const torch::Tensor& per_channel = saved[2];
        const float* mp = per_channel.data_ptr<float>();
        const float* ip = mp + c;
        const float* sp = mp + 2 * c;
        const float* hp = mp + 3 * c;
        // dz, then dx, goes over dy when nothing else holds it (a sum's backward hands one
        // tensor to both branches; those keep a second reference): writing into the lines
        // just read spares a new buffer's read-for-ownership (by count, one of the two passes'
        // six streams of rows).
        auto dx =
            owns_whole_storage(dy) ? dy : torch::empty_like(x, torch::MemoryFormat::ChannelsLast);
        float* dxp = dx.data_ptr<float>();
        const std::vector<double> sums =
            summed_over_rows(rows, c, [&](std::int64_t b, std::int64_t e, double* a, double* d) {
                bn_silu_backward_sums_avx512(dy_rows, in, c, b, e, sp, hp, mp, ip, a, d, dxp);
            });
        auto grad_weight = torch::empty({c}, torch::kFloat32);
        auto grad_bias = torch::empty({c}, torch::kFloat32);
        std::vector<float> means(static_cast<std::size_t>(3 * c));  // mean dz, mean dz xhat, gain
        float* mdz = means.data();
        float* mdx = mdz + c;
        float* gp = mdz + 2 * c;
        float* gwp = grad_weight.data_ptr<float>();
        float* gbp = grad_bias.data_ptr<float>();
        const float* wp = weight.data_ptr<float>();
        for (std::int64_t i = 0; i < c; ++i) {
            const double dz = sums[static_cast<std::size_t>(i)];
            const double dz_xhat = sums[static_cast<std::size_t>(c + i)];
            mdz[i] = static_cast<float>(dz / static_cast<double>(rows));
            mdx[i] = static_cast<float>(dz_xhat / static_cast<double>(rows));
            gbp[i] = static_cast<float>(dz);
            gwp[i] = static_cast<float>(dz_xhat);
            gp[i] = wp[i] * ip[i];
        }
        at::parallel_for(0, rows, kRowGrain, [&](std::int64_t b, std::int64_t e) {
            bn_silu_backward_dx_avx512(in, c, b, e, mp, ip, mdz, mdx, gp, dxp);
        });
        return {dx, grad_weight, grad_bias, torch::Tensor(), torch::Tensor()};
    }
};

bool fusable(const torch::Tensor& x, const torch::nn::BatchNorm2dImpl& bn) {
    const auto& o = bn.options;
    return fused_cpu_kernels_enabled() && bn.is_training() && o.affine() &&
           o.track_running_stats() && o.momentum().has_value() && x.dim() == 4 &&
           x.device().is_cpu() && x.scalar_type() == torch::kFloat32 &&
           bn.weight.scalar_type() == torch::kFloat32 && bn.bias.scalar_type() == torch::kFloat32 &&
           bn.running_mean.scalar_type() == torch::kFloat32 &&
           bn.running_var.scalar_type() == torch::kFloat32 &&
           x.is_contiguous(torch::MemoryFormat::ChannelsLast) && x.numel() > 0 &&
           x.numel() / x.size(1) > 1 && bn_silu_avx512_available(x.size(1));
}

}  // namespace

std::optional<torch::Tensor> fused_bn_silu(const torch::Tensor& x, torch::nn::BatchNorm2dImpl& bn) {
    if (!fusable(x, bn)) return std::nullopt;
    const std::int64_t c = x.size(1);
    torch::Tensor stats = torch::empty({2 * c}, torch::kFloat64);
    torch::Tensor y = BnSiluFunction::apply(x, bn.weight, bn.bias, bn.options.eps(), stats);
    update_running_statistics(bn, stats.narrow(0, 0, c), stats.narrow(0, c, c),
                              static_cast<double>(x.numel() / c));
    return y;
}

}  // namespace crucible::engine
