#include "core/engine/autocast.h"

#include <ATen/autocast_mode.h>
#include <ATen/cpu/Utils.h>

namespace crucible::engine {

const char* AutocastMode::name() const {
    if (!enabled) return "off";
    return dtype == c10::kBFloat16 ? "bf16" : "fp16";
}

AutocastMode training_autocast(bool amp, const std::string& amp_dtype, const c10::Device& device) {
    const bool bf16 = amp_dtype == "bf16";
    if (device.is_cuda()) return {amp, c10::DeviceType::CUDA, bf16 ? c10::kBFloat16 : c10::kHalf};
    return {amp && bf16, c10::DeviceType::CPU, c10::kBFloat16};
}

bool cpu_has_native_bf16() {
    static const bool native = [] {
        const auto caps = at::cpu::get_cpu_capabilities();
        for (const char* key : {"amx_bf16", "avx512_bf16"}) {
            const auto it = caps.find(key);
            if (it != caps.end() && it->second.isBool() && it->second.toBool()) return true;
        }
        return false;
    }();
    return native;
}

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
