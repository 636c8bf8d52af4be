#include "core/engine/autocast.h"

#include <ATen/autocast_mode.h>

namespace crucible::engine {

bool cuda_autocast_active() {
    return at::autocast::is_autocast_enabled(at::kCUDA);
}

AutocastMode current_autocast() {
    for (const auto device : {c10::DeviceType::CUDA, c10::DeviceType::CPU})
        if (at::autocast::is_autocast_enabled(device))
            return {true, device, at::autocast::get_autocast_dtype(device)};
    return {};
}

AutocastGuard::AutocastGuard(AutocastMode mode) : mode_(mode) {
    if (!mode_.enabled) return;
    previous_enabled_ = at::autocast::is_autocast_enabled(mode_.device);
    previous_dtype_ = at::autocast::get_autocast_dtype(mode_.device);
    at::autocast::set_autocast_dtype(mode_.device, mode_.dtype);
    at::autocast::set_autocast_enabled(mode_.device, true);
    at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
    if (!mode_.enabled) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(mode_.device, previous_enabled_);
    at::autocast::set_autocast_dtype(mode_.device, previous_dtype_);
}

}  // namespace crucible::engine
