#include "core/jobs/sysmem_fallback.h"

namespace crucible::jobs {

namespace {
// NvAPI_Status values from NVIDIA's public nvapi_lite_common.h.
constexpr int kNvapiOk = 0;
constexpr int kNvapiSettingNotFound = -160;
}  // namespace

const char* sysmem_fallback_name(SysmemFallback policy) {
    switch (policy) {
        case SysmemFallback::NotApplicable:
            return "not applicable (no fallback on this platform)";
        case SysmemFallback::Unknown:
            return "unknown";
        case SysmemFallback::DriverDefault:
            return "driver default (falls back)";
        case SysmemFallback::PreferNoFallback:
            return "prefer no sysmem fallback";
        case SysmemFallback::PreferFallback:
            return "prefer sysmem fallback";
    }
    return "?";
}

SysmemFallbackReading sysmem_fallback_from_nvapi(int status, std::uint32_t value) {
    // A setting nobody changed is absent from the profile: the driver's default applies.
    if (status == kNvapiSettingNotFound) return {SysmemFallback::DriverDefault, {}};
    if (status != kNvapiOk)
        return {SysmemFallback::Unknown,
                "NvAPI could not read the setting (status " + std::to_string(status) + ")"};
    switch (value) {
        case 0:
            return {SysmemFallback::DriverDefault, {}};
        case 1:
            return {SysmemFallback::PreferNoFallback, {}};
        case 2:
            return {SysmemFallback::PreferFallback, {}};
        default:
            return {SysmemFallback::Unknown,
                    "the driver holds a value this version does not know (" +
                        std::to_string(value) + ")"};
    }
}

}  // namespace crucible::jobs
