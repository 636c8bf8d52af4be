// A stand-in for the driver's nvapi64.dll, for SysmemFallback.* in platform_test.cpp: it hands
// out the driver-settings entry points by their NvAPI ids and answers a read of the sysmem
// fallback policy as CRUCIBLE_FAKE_NVAPI says: a number (the setting's value), "unset" (not in
// the profile), "no-driver" (NvAPI cannot start) or "text" (a setting of another type).
// The entry point ids, the setting id and NVDRS_SETTING_V1's byte offsets are written out here
// on their own, not taken from the product: a wrong id or layout there shows as a failed read.
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr int kOk = 0, kNoDevice = -6, kBadVersion = -9, kInvalidArgument = -5,
              kSettingNotFound = -160;
constexpr std::uint32_t kPolicySetting = 0x10ECECC9;
constexpr std::uint32_t kSettingSize = 12320;  // sizeof(NVDRS_SETTING_V1)
constexpr std::size_t kIdOffset = 4 + 4096, kTypeOffset = kIdOffset + 4,
                      kCurrentValueOffset = kTypeOffset + 4 * 4 + 4100;

int g_sessions = 0;     // created and not yet destroyed
int g_initialised = 0;  // Initialize calls not matched by Unload
int g_session_tag = 0, g_profile_tag = 0;

std::string mode() {
    char value[64] = {};
    const DWORD n = GetEnvironmentVariableA("CRUCIBLE_FAKE_NVAPI", value, sizeof value);
    return n > 0 && n < sizeof value ? std::string(value, n) : std::string("unset");
}

void put_u32(void* setting, std::size_t offset, std::uint32_t value) {
    std::memcpy(static_cast<char*>(setting) + offset, &value, sizeof value);
}
std::uint32_t get_u32(const void* setting, std::size_t offset) {
    std::uint32_t value = 0;
    std::memcpy(&value, static_cast<const char*>(setting) + offset, sizeof value);
    return value;
}

int initialize() {
    if (mode() == "no-driver") return kNoDevice;
    ++g_initialised;
    return kOk;
}
int unload() {
    --g_initialised;
    return kOk;
}
int create_session(void** session) {
    ++g_sessions;
    *session = &g_session_tag;
    return kOk;
}
int destroy_session(void* session) {
    if (session != &g_session_tag) return kInvalidArgument;
    --g_sessions;
    return kOk;
}
int load_settings(void* session) {
    return session == &g_session_tag ? kOk : kInvalidArgument;
}
int base_profile(void* session, void** profile) {
    if (session != &g_session_tag) return kInvalidArgument;
    *profile = &g_profile_tag;
    return kOk;
}
int get_setting(void* session, void* profile, std::uint32_t id, void* setting) {
    if (session != &g_session_tag || profile != &g_profile_tag) return kInvalidArgument;
    if (get_u32(setting, 0) != (kSettingSize | (1u << 16))) return kBadVersion;
    const std::string m = mode();
    if (id != kPolicySetting || m == "unset") return kSettingNotFound;
    put_u32(setting, kIdOffset, id);
    put_u32(setting, kTypeOffset, m == "text" ? 3u : 0u);
    put_u32(setting, kCurrentValueOffset,
            static_cast<std::uint32_t>(std::strtoul(m.c_str(), nullptr, 10)));
    return kOk;
}

}  // namespace

extern "C" __declspec(dllexport) void* nvapi_QueryInterface(std::uint32_t id) {
    switch (id) {
        case 0x0150e828:
            return reinterpret_cast<void*>(&initialize);
        case 0xd22bdd7e:
            return reinterpret_cast<void*>(&unload);
        case 0x0694d52e:
            return reinterpret_cast<void*>(&create_session);
        case 0xdad9cff8:
            return reinterpret_cast<void*>(&destroy_session);
        case 0x375dbd6b:
            return reinterpret_cast<void*>(&load_settings);
        case 0xda8466a0:
            return reinterpret_cast<void*>(&base_profile);
        case 0x73bf8338:
            return reinterpret_cast<void*>(&get_setting);
        default:
            return nullptr;
    }
}

// What the product left open: sessions not destroyed plus Initialize calls not unloaded.
extern "C" __declspec(dllexport) int fake_nvapi_left_open() {
    return g_sessions + g_initialised;
}
