#include "core/engine/host_read.h"

#include <atomic>

namespace crucible::engine {

namespace {
std::atomic<std::uint64_t> reads{0};
}  // namespace

double host_double(const torch::Tensor& scalar) {
    ++reads;
    return scalar.detach().to(torch::kCPU, torch::kDouble).item<double>();
}

bool host_bool(const torch::Tensor& scalar) {
    ++reads;
    return scalar.detach().to(torch::kCPU).item<bool>();
}

torch::Tensor host_doubles(const torch::Tensor& values) {
    ++reads;
    return values.detach().to(torch::kCPU, torch::kDouble).contiguous();
}

std::uint64_t host_read_count() {
    return reads.load();
}

}  // namespace crucible::engine
