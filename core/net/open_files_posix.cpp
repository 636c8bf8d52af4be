// POSIX part of open_files.h: RLIMIT_NOFILE. The Windows twin is open_files_windows.cpp.
#ifndef _WIN32
#include <sys/resource.h>

#include "core/net/open_files.h"

namespace crucible::net {

std::uint64_t open_file_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
    return static_cast<std::uint64_t>(limit.rlim_cur);
}

std::uint64_t raise_open_file_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        // macOS refuses RLIM_INFINITY (and values over OPEN_MAX) here; the old limit stays then.
        ::setrlimit(RLIMIT_NOFILE, &limit);
    }
    return open_file_limit();
}

}  // namespace crucible::net
#endif
