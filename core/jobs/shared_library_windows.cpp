#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>

#include "core/jobs/shared_library.h"

namespace crucible::jobs {

std::unique_ptr<SharedLibrary> SharedLibrary::open(const std::filesystem::path& name) {
    HMODULE h = LoadLibraryW(name.c_str());
    if (!h) {
        // nvml.dll ships in System32 with current drivers, older ones under NVSMI.
        wchar_t buf[MAX_PATH];
        if (GetEnvironmentVariableW(L"ProgramW6432", buf, MAX_PATH))
            h = LoadLibraryW(
                (std::filesystem::path(buf) / L"NVIDIA Corporation" / L"NVSMI" / name).c_str());
    }
    if (!h) return nullptr;
    return std::unique_ptr<SharedLibrary>(new SharedLibrary(reinterpret_cast<void*>(h)));
}

SharedLibrary::~SharedLibrary() {
    if (handle_) FreeLibrary(reinterpret_cast<HMODULE>(handle_));
}

void* SharedLibrary::raw_symbol(const char* name) const {
    return reinterpret_cast<void*>(GetProcAddress(reinterpret_cast<HMODULE>(handle_), name));
}

}  // namespace crucible::jobs
#endif
