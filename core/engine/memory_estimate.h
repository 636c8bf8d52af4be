#pragma once
// A predicted peak of device memory for a training run, in named parts (weights, optimizer
// state, activations, ...), so that a run that will not fit is known before it starts: `crucible
// train ... dry_run=true` prints it, and Task::estimate_memory makes it. Plain numbers: no
// LibTorch here.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace crucible::engine {

struct MemoryEstimate {
    std::vector<std::pair<std::string, std::int64_t>> parts;  // bytes, in the order they add up
    std::vector<std::string> notes;                           // assumptions worth showing
    // What lowers it, in the task's options (the dry run says it when the run will not fit).
    std::string advice;

    std::int64_t total() const;
    // One line a part with MiB figures, the total, then the notes.
    std::string table() const;
    // "fits" / "does not fit" in `capacity_bytes` of device memory, with the margin kept for
    // the CUDA context and the allocator's fragmentation (kDeviceReserve plus 10 %).
    bool fits(std::int64_t capacity_bytes) const;
};

// What a device keeps for itself beyond the allocator's blocks (CUDA context, cuBLAS and
// cuDNN workspaces).
inline constexpr std::int64_t kDeviceReserve = std::int64_t{768} << 20;

}  // namespace crucible::engine
