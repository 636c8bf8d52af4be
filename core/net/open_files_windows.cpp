// Windows part of open_files.h. Sockets are kernel handles, not C runtime descriptors, so no
// per-process limit applies to them (_setmaxstdio concerns FILE* streams only): nothing to
// raise.
#ifdef _WIN32
#include "core/net/open_files.h"

namespace crucible::net {

std::uint64_t open_file_limit() {
    return 0;
}

std::uint64_t raise_open_file_limit() {
    return 0;
}

}  // namespace crucible::net
#endif
