// Windows half of process_info.h (compiled on Windows and by the mingw-w64 check in CI).
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>
// After windows.h: K32GetProcessMemoryInfo lives in kernel32 (no psapi.lib needed).
#include <psapi.h>

#include "core/base/process_info.h"

namespace crucible {

bool process_alive(long pid) {
    HANDLE h = OpenProcess(SYNCHRONIZE, FALSE, static_cast<DWORD>(pid));
    if (!h) return false;
    bool alive = WaitForSingleObject(h, 0) == WAIT_TIMEOUT;
    CloseHandle(h);
    return alive;
}

std::string process_start_token(long pid) {
    HANDLE h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, static_cast<DWORD>(pid));
    if (!h) return "";
    FILETIME created{}, exited{}, kernel{}, user{};
    const BOOL ok = GetProcessTimes(h, &created, &exited, &kernel, &user);
    CloseHandle(h);
    if (!ok) return "";
    return std::to_string((static_cast<unsigned long long>(created.dwHighDateTime) << 32) |
                          created.dwLowDateTime);
}

void kill_process(long pid) {
    HANDLE h = OpenProcess(PROCESS_TERMINATE, FALSE, static_cast<DWORD>(pid));
    if (!h) return;
    TerminateProcess(h, 137);
    CloseHandle(h);
}

namespace {

PROCESS_MEMORY_COUNTERS memory_counters() {
    PROCESS_MEMORY_COUNTERS counters{};
    counters.cb = sizeof counters;
    if (!K32GetProcessMemoryInfo(GetCurrentProcess(), &counters, sizeof counters))
        return PROCESS_MEMORY_COUNTERS{};
    return counters;
}

}  // namespace

std::int64_t resident_bytes() {
    return static_cast<std::int64_t>(memory_counters().WorkingSetSize);
}

std::int64_t peak_resident_bytes() {
    return static_cast<std::int64_t>(memory_counters().PeakWorkingSetSize);
}

bool reset_peak_resident_bytes() {
    return false;  // Windows keeps PeakWorkingSetSize for the process's life
}

}  // namespace crucible
#endif
