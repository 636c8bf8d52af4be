#pragma once
// What a CUDA device's memory looks like to this process: the caching allocator's allocated and
// reserved bytes (LibTorch keeps freed blocks reserved for reuse, so NVML shows `reserved` plus
// the CUDA context) and the card's dedicated memory. Host-side counters: reading them does not
// wait for the device.
#include <torch/torch.h>

#include <optional>

#include "core/engine/memory_spill.h"

namespace crucible::engine {

// nullopt for a CPU device. seconds_per_step is left 0 for the caller.
std::optional<MemoryWindow> device_memory(const torch::Device& device);

}  // namespace crucible::engine
