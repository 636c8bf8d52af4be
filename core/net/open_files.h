#pragma once
// How many files and sockets the process may hold open. The agent raises its soft limit to the
// hard one at start: each client connection is a descriptor, and a distribution's default soft
// limit (1,024) is below the server's connection cap (HttpServerOptions::max_connections). The
// server sizes its cap to what it is given. Platform parts: open_files_posix.cpp,
// open_files_windows.cpp (std-only header, so the mingw check compiles the Windows file).
#include <cstdint>

namespace crucible::net {

// Raises the soft limit on open descriptors to the hard limit; returns the soft limit now in
// force (0 = no such limit on this platform).
std::uint64_t raise_open_file_limit();

// The soft limit in force (0 = no such limit on this platform).
std::uint64_t open_file_limit();

}  // namespace crucible::net
