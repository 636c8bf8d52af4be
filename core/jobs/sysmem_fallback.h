#pragma once
// Windows' "CUDA - Sysmem Fallback Policy": with a GPU in WDDM mode, a driver since R536 lets a
// CUDA allocation that does not fit spill into system memory instead of failing, so a run that
// should stop with "out of memory" crawls on for hours. The policy is a driver profile setting
// (NVIDIA Control Panel, Manage 3D settings), read here through NvAPI's driver settings (DRS)
// from the base profile. Linux drivers have no such fallback.
#include <cstdint>
#include <filesystem>
#include <string>

namespace crucible::jobs {

enum class SysmemFallback {
    NotApplicable,     // not Windows, or no GPU in WDDM mode: nothing falls back
    Unknown,           // NvAPI missing or failing: `note` says why
    DriverDefault,     // not set in the profile: the driver falls back
    PreferNoFallback,  // what training wants: out of memory fails at once
    PreferFallback,
};
// "prefer no sysmem fallback", "driver default (falls back)", ...
const char* sysmem_fallback_name(SysmemFallback policy);

struct SysmemFallbackReading {
    SysmemFallback policy = SysmemFallback::Unknown;
    std::string note;  // why Unknown; empty otherwise
};

// NvAPI's answer to a DRS read of the setting, in our terms. `status` is the NvAPI_Status of
// NvAPI_DRS_GetSetting; `value` its u32CurrentValue. Pure, so every platform tests it.
SysmemFallbackReading sysmem_fallback_from_nvapi(int status, std::uint32_t value);

// Reads the machine's policy: nvapi64.dll from the driver, or `nvapi` (tests: a fake).
SysmemFallbackReading read_sysmem_fallback(const std::filesystem::path& nvapi = {});

}  // namespace crucible::jobs
