#include "core/engine/batch_norm_running.h"

#include <algorithm>
#include <cstdint>

namespace crucible::engine {

void update_running_statistics(torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& mean,
                               const torch::Tensor& biased_var, double count) {
    const auto& o = bn.options;
    if (!o.track_running_stats()) return;
    torch::NoGradGuard no_grad;
    bn.num_batches_tracked.add_(1);
    const double momentum =
        o.momentum() ? *o.momentum()
                     : 1.0 / static_cast<double>(bn.num_batches_tracked.item<std::int64_t>());
    const auto& rm = bn.running_mean;
    const auto& rv = bn.running_var;
    // Running variance is the unbiased one, as BatchNorm keeps it.
    const torch::Tensor var =
        (biased_var * (count / std::max(count - 1, 1.0))).to(rv.device()).to(rv.scalar_type());
    rm.mul_(1 - momentum).add_(mean.to(rm.device()).to(rm.scalar_type()), momentum);
    rv.mul_(1 - momentum).add_(var, momentum);
}

}  // namespace crucible::engine
