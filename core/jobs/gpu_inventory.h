#pragma once
// GPU inventory through NVML, loaded at run time (libnvidia-ml.so.1 / nvml.dll) so the agent
// starts on machines without NVIDIA drivers. No NVML or no GPU is a normal state, reported as
// such, never an error.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/jobs/gpu_topology.h"
#include "core/net/api_types.h"

namespace crucible::jobs {

using net::GpuInfo;
using net::GpuReport;
using net::MigInstance;

class GpuInventory {
  public:
    // Loads NVML from `library` (tests: a fake) or the platform default.
    static std::unique_ptr<GpuInventory> open(const std::filesystem::path& library = {});
    virtual ~GpuInventory() = default;
    virtual GpuReport read() = 0;
    // How close each pair of GPUs is (gpu_topology.h); empty when NVML cannot tell.
    virtual GpuTopology topology() = 0;
};

}  // namespace crucible::jobs
