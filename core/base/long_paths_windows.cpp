// Windows half of long_paths.h: the LongPathsEnabled registry value (compiled on Windows, by the
// mingw-w64 check and in the wine tests). The POSIX twin is long_paths_posix.cpp.
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>

#include "core/base/long_paths.h"
#include "core/base/wide_text_windows.h"

namespace crucible {
namespace {

constexpr const wchar_t* kFileSystemKey = L"SYSTEM\\CurrentControlSet\\Control\\FileSystem";
constexpr const wchar_t* kLongPathsValue = L"LongPathsEnabled";

}  // namespace

bool long_paths_enabled() {
    DWORD value = 0, size = sizeof value;
    return RegGetValueW(HKEY_LOCAL_MACHINE, kFileSystemKey, kLongPathsValue, RRF_RT_REG_DWORD,
                        nullptr, &value, &size) == ERROR_SUCCESS &&
           value == 1;
}

std::string enable_long_paths() {
    const DWORD on = 1;
    const LSTATUS rc = RegSetKeyValueW(HKEY_LOCAL_MACHINE, kFileSystemKey, kLongPathsValue,
                                       REG_DWORD, &on, sizeof on);
    if (rc == ERROR_SUCCESS) return {};
    return platform::admin_failure(
        "cannot set HKLM\\SYSTEM\\CurrentControlSet\\Control\\FileSystem\\LongPathsEnabled",
        static_cast<DWORD>(rc));
}

}  // namespace crucible
#endif
