#include "core/engine/fused_kernels.h"

#include <atomic>

namespace crucible::engine {
namespace {

std::atomic<bool> g_fused{true};

}  // namespace

bool fused_cpu_kernels_enabled() {
    return g_fused.load(std::memory_order_relaxed);
}

void set_fused_cpu_kernels_enabled(bool enabled) {
    g_fused.store(enabled, std::memory_order_relaxed);
}

}  // namespace crucible::engine
