#ifdef _WIN32
#include <cstdint>
#include <memory>
#include <string>

#include "core/jobs/shared_library.h"
#include "core/jobs/sysmem_fallback.h"

namespace crucible::jobs {

namespace {

// nvapi64.dll exports one function, nvapi_QueryInterface, which hands out every other entry
// point by a 32-bit id. The ids and the layouts below are those of NVIDIA's public NvAPI SDK
// (nvapi_interface.h, nvapi.h).
using QueryInterface = void* (*)(std::uint32_t id);
constexpr std::uint32_t kInitialize = 0x0150e828;
constexpr std::uint32_t kUnload = 0xd22bdd7e;
constexpr std::uint32_t kCreateSession = 0x0694d52e;
constexpr std::uint32_t kDestroySession = 0xdad9cff8;
constexpr std::uint32_t kLoadSettings = 0x375dbd6b;
constexpr std::uint32_t kGetBaseProfile = 0xda8466a0;
constexpr std::uint32_t kGetSetting = 0x73bf8338;

// The policy's setting id is not in the SDK's NvApiDriverSettings.h; it is the id NVIDIA
// Profile Inspector shows for "CUDA - Sysmem Fallback Policy" (0 driver default, 1 prefer no
// fallback, 2 prefer fallback). docs/windows-checklist.md checks it against the Control Panel.
constexpr std::uint32_t kSysmemFallbackSetting = 0x10ECECC9;
constexpr std::uint32_t kDwordType = 0;

using Handle = void*;
// NVDRS_SETTING_V1: a DWORD setting's value is the first four bytes of each union.
struct DrsSetting {
    std::uint32_t version;
    std::uint16_t name[2048];
    std::uint32_t setting_id;
    std::uint32_t type;
    std::uint32_t location;
    std::uint32_t is_current_predefined;
    std::uint32_t is_predefined_valid;
    union {
        std::uint32_t u32;
        std::uint8_t bytes[4100];  // the binary form: length, then 4096 bytes
    } predefined, current;
};
static_assert(sizeof(DrsSetting) == 12320, "NVDRS_SETTING_V1 is 12320 bytes");
constexpr std::uint32_t kDrsSettingVersion1 = sizeof(DrsSetting) | (1u << 16);

template <typename Fn>
Fn entry(QueryInterface query, std::uint32_t id) {
    return reinterpret_cast<Fn>(query(id));
}

// The driver-settings entry points, null where this driver's NvAPI lacks one.
struct DrsCalls {
    explicit DrsCalls(QueryInterface query)
        : initialize(entry<int (*)()>(query, kInitialize)),
          unload(entry<int (*)()>(query, kUnload)),
          create_session(entry<int (*)(Handle*)>(query, kCreateSession)),
          destroy_session(entry<int (*)(Handle)>(query, kDestroySession)),
          load_settings(entry<int (*)(Handle)>(query, kLoadSettings)),
          base_profile(entry<int (*)(Handle, Handle*)>(query, kGetBaseProfile)),
          get_setting(
              entry<int (*)(Handle, Handle, std::uint32_t, DrsSetting*)>(query, kGetSetting)) {}
    bool complete() const {
        return initialize && unload && create_session && destroy_session && load_settings &&
               base_profile && get_setting;
    }
    int (*initialize)();
    int (*unload)();
    int (*create_session)(Handle*);
    int (*destroy_session)(Handle);
    int (*load_settings)(Handle);
    int (*base_profile)(Handle, Handle*);
    int (*get_setting)(Handle, Handle, std::uint32_t, DrsSetting*);
};

SysmemFallbackReading unknown(const std::string& what, int status) {
    return {SysmemFallback::Unknown, what + " (status " + std::to_string(status) + ")"};
}

// The policy from the base profile, in an open session.
SysmemFallbackReading read_in_session(const DrsCalls& nvapi, Handle session) {
    Handle profile = nullptr;
    int status = nvapi.load_settings(session);
    if (status == 0) status = nvapi.base_profile(session, &profile);
    if (status != 0) return unknown("NvAPI could not load the driver's profiles", status);
    // Heap, not stack: the structure is 12 KB of mostly unused string buffers.
    auto setting = std::make_unique<DrsSetting>();
    setting->version = kDrsSettingVersion1;
    status = nvapi.get_setting(session, profile, kSysmemFallbackSetting, setting.get());
    if (status == 0 && setting->type != kDwordType)
        return {SysmemFallback::Unknown, "the setting is not a number in this driver"};
    return sysmem_fallback_from_nvapi(status, setting->current.u32);
}

}  // namespace

SysmemFallbackReading read_sysmem_fallback(const std::filesystem::path& nvapi) {
    const auto lib =
        SharedLibrary::open(nvapi.empty() ? std::filesystem::path(L"nvapi64.dll") : nvapi);
    if (!lib) return {SysmemFallback::Unknown, "nvapi64.dll not found (no NVIDIA driver)"};
    const auto query = lib->symbol<QueryInterface>("nvapi_QueryInterface");
    if (!query) return {SysmemFallback::Unknown, "nvapi64.dll has no nvapi_QueryInterface"};
    const DrsCalls calls(query);
    if (!calls.complete())
        return {SysmemFallback::Unknown, "this driver's NvAPI lacks the driver-settings calls"};

    if (const int status = calls.initialize(); status != 0)
        return unknown("NvAPI could not start, no NVIDIA display driver?", status);
    Handle session = nullptr;
    SysmemFallbackReading reading;
    if (const int status = calls.create_session(&session); status != 0) {
        reading = unknown("NvAPI opened no settings session", status);
    } else {
        reading = read_in_session(calls, session);
        calls.destroy_session(session);
    }
    calls.unload();
    return reading;
}

}  // namespace crucible::jobs
#endif
