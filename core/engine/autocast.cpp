#include "core/engine/autocast.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

namespace crucible::engine {

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool cuda_autocast_active() {
    return at::autocast::is_autocast_enabled(at::kCUDA);
}
namespace {
void set_cuda_autocast(bool on) {
    at::autocast::set_autocast_enabled(at::kCUDA, on);
}
}  // namespace
#else
bool cuda_autocast_active() {
    return at::autocast::is_enabled();
}
namespace {
void set_cuda_autocast(bool on) {
    at::autocast::set_enabled(on);
}
}  // namespace
#endif

AutocastGuard::AutocastGuard(bool enabled) : enabled_(enabled) {
    if (!enabled_) return;
    previous_ = cuda_autocast_active();
    set_cuda_autocast(true);
    at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
    if (!enabled_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    set_cuda_autocast(previous_);
}

}  // namespace crucible::engine
