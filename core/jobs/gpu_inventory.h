#pragma once
// GPU inventory through NVML, loaded at run time (libnvidia-ml.so.1 / nvml.dll) so the agent
// starts on machines without NVIDIA drivers. No NVML or no GPU is a normal state, reported as
// such, never an error.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/base/json.h"

namespace crucible::jobs {

struct MigInstance {
    int index = 0;
    std::string name;
    std::uint64_t memory_total = 0;
};

struct GpuInfo {
    int index = 0;
    std::string name;
    std::string uuid;
    std::uint64_t memory_total = 0, memory_used = 0;
    int utilization = 0;  // percent
    int temperature = 0;  // °C
    double power_w = 0;
    std::vector<unsigned> process_ids;
    bool mig_enabled = false;
    std::vector<MigInstance> mig;
};

struct GpuReport {
    bool nvml = false;            // NVML found and initialised
    std::string note;             // why there are no GPUs, in words
    std::string driver_version;   // "550.54.15"
    int cuda_driver_version = 0;  // 12040 = 12.4
    std::vector<GpuInfo> gpus;
    Json to_json() const;
};

class GpuInventory {
  public:
    // Loads NVML from `library` (tests: a fake) or the platform default.
    static std::unique_ptr<GpuInventory> open(const std::filesystem::path& library = {});
    virtual ~GpuInventory() = default;
    virtual GpuReport read() = 0;
};

}  // namespace crucible::jobs
