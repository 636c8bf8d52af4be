#include "core/engine/device_loss_sums.h"

#include "core/engine/host_read.h"

namespace crucible::engine {

void DeviceLossSums::reset(const std::vector<double>& sums, const torch::Device& device) {
    count_ = static_cast<std::int64_t>(sums.size());
    std::vector<double> init(sums);
    init.push_back(-1.0);
    init.push_back(0.0);
    values_ = torch::tensor(init, torch::dtype(torch::kFloat64)).to(device);
}

void DeviceLossSums::add(const torch::Tensor& total, const torch::Tensor& items,
                         std::int64_t step) {
    torch::NoGradGuard no_grad;
    torch::Tensor v = items.detach().flatten().to(values_.device(), torch::kFloat64);
    if (v.numel() > count_) v = v.narrow(0, 0, count_);
    if (v.numel() < count_) v = torch::cat({v, torch::zeros({count_ - v.numel()}, v.options())});
    values_.narrow(0, 0, count_).add_(v);
    // The first non-finite total keeps its step and value: bad step < 0 and this one is bad.
    const torch::Tensor t = total.detach().reshape({}).to(values_.device(), torch::kFloat64);
    const torch::Tensor first = values_[count_].lt(0).logical_and(t.isfinite().logical_not());
    values_[count_] = torch::where(first, static_cast<double>(step), values_[count_]);
    values_[count_ + 1] = torch::where(first, t, values_[count_ + 1]);
}

std::optional<DeviceLossSums::NonFinite> DeviceLossSums::read(std::vector<double>& sums) {
    if (!values_.defined()) return std::nullopt;
    const torch::Tensor host = host_doubles(values_);
    const double* p = host.data_ptr<double>();
    sums.assign(p, p + count_);
    if (p[count_] < 0) return std::nullopt;
    return NonFinite{static_cast<std::int64_t>(p[count_]), p[count_ + 1]};
}

}  // namespace crucible::engine
