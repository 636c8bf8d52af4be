// POSIX half of process_info.h. The Windows twin is process_info_windows.cpp.
#ifndef _WIN32
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/base/process_info.h"

namespace crucible {

bool process_alive(long pid) {
    if (pid <= 0) return false;
    if (::kill(static_cast<pid_t>(pid), 0) != 0) return errno == EPERM;
    // A zombie (ended, not yet reaped by its parent) counts as gone.
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if (FILE* f = std::fopen(path, "r")) {
        char state = 0;
        int n = std::fscanf(f, "%*d %*s %c", &state);
        std::fclose(f);
        if (n == 1 && state == 'Z') return false;
    }
    return true;
}

std::string process_start_token(long pid) {
    // Field 22 of /proc/<pid>/stat: the start time in clock ticks after boot. Field 2 (the
    // command name) may hold spaces and parentheses, so fields are counted after its last ')'.
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE* f = std::fopen(path, "r");
    if (!f) return "";
    char buf[1024];
    const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = 0;
    const char* p = std::strrchr(buf, ')');
    if (!p) return "";
    int field = 2;
    for (; *p && field < 22; ++p)
        if (*p == ' ') ++field;
    std::string token;
    while (*p >= '0' && *p <= '9')
        token += *p++;
    return token;
}

void kill_process(long pid) {
    if (pid > 0) ::kill(static_cast<pid_t>(pid), SIGKILL);
}

std::int64_t resident_bytes() {
    // /proc/self/statm: total and resident sizes in pages (Linux).
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    long total = 0, resident = 0;
    const int n = std::fscanf(f, "%ld %ld", &total, &resident);
    std::fclose(f);
    return n == 2 ? static_cast<std::int64_t>(resident) * ::sysconf(_SC_PAGESIZE) : 0;
}

std::int64_t peak_resident_bytes() {
    // VmHWM of /proc/self/status follows reset_peak_resident_bytes; getrusage's peak does not.
    if (FILE* f = std::fopen("/proc/self/status", "r")) {
        char line[256];
        long kib = -1;
        while (std::fgets(line, sizeof line, f))
            if (std::sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
        std::fclose(f);
        if (kib >= 0) return static_cast<std::int64_t>(kib) * 1024;
    }
    rusage usage{};
    if (::getrusage(RUSAGE_SELF, &usage) != 0) return 0;
    return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux counts KiB
}

bool reset_peak_resident_bytes() {
    // Linux 4.0+: writing 5 to clear_refs resets the peak resident size (VmHWM).
    FILE* f = std::fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    const bool written = std::fputs("5", f) >= 0;
    return std::fclose(f) == 0 && written;
}

}  // namespace crucible
#endif
