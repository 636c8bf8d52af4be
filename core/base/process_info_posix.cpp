// POSIX half of process_info.h. The Windows twin is process_info_windows.cpp.
#ifndef _WIN32
#include <signal.h>

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

}  // namespace crucible
#endif
