#include "core/engine/device_memory.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>

namespace crucible::engine {

std::optional<MemoryWindow> device_memory(const torch::Device& device) {
    if (!device.is_cuda()) return std::nullopt;
    const c10::DeviceIndex index = device.has_index() ? device.index() : 0;
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
    constexpr auto kAll = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    MemoryWindow w;
    w.allocated = static_cast<std::uint64_t>(stats.allocated_bytes[kAll].current);
    w.reserved = static_cast<std::uint64_t>(stats.reserved_bytes[kAll].current);
    w.peak_reserved = static_cast<std::uint64_t>(stats.reserved_bytes[kAll].peak);
    w.dedicated = static_cast<std::uint64_t>(at::cuda::getDeviceProperties(index)->totalGlobalMem);
    return w;
}

}  // namespace crucible::engine
