#pragma once
// Windows' 260-character limit on paths. Our programs declare longPathAware in their manifest
// (resources/windows/crucible.manifest), but Windows honours that only once the machine enables
// long paths: LongPathsEnabled = 1 under HKLM\SYSTEM\CurrentControlSet\Control\FileSystem (the
// policy "Enable Win32 long paths"), off on a fresh Windows Server. Without it a dataset or a run
// in a deep folder fails with "path not found". POSIX has no such limit. The platform parts are
// long_paths_posix.cpp and long_paths_windows.cpp.
#include <string>

namespace crucible {

// True where paths over 260 characters work (always on POSIX).
bool long_paths_enabled();

// Enables them for the whole machine (administrators only; programs started afterwards see it).
// Returns "" or what went wrong.
std::string enable_long_paths();

}  // namespace crucible
