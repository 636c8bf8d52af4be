// POSIX half of long_paths.h: no 260-character limit to lift. The Windows twin is
// long_paths_windows.cpp.
#ifndef _WIN32
#include "core/base/long_paths.h"

namespace crucible {

bool long_paths_enabled() {
    return true;
}

std::string enable_long_paths() {
    return {};
}

}  // namespace crucible
#endif
