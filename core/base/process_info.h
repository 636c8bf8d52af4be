#pragma once
// Other processes by id: alive or not, when they started (a pid can be reused), killing one.
// The agent uses it for workers that outlived it, a rank of a data-parallel run for its
// launcher. The platform parts are process_info_posix.cpp and process_info_windows.cpp.
#include <cstdint>
#include <string>

namespace crucible {

// True while a process with this id exists (a zombie counts as gone).
bool process_alive(long pid);
// An opaque text that differs between two processes that had the same pid (their start time);
// "" when the process is gone or the system cannot tell.
std::string process_start_token(long pid);
// True when `pid` is alive and still the process whose start token was `token` ("" = unknown,
// judged by the pid alone).
bool is_same_process(long pid, const std::string& token);
// Hard kill of a process this program did not start itself (an orphaned worker).
void kill_process(long pid);
// (This process's own id is platform::process_id() in file_io.h.)

// This process's resident memory (working set) now, and its peak so far, in bytes; 0 where the
// system cannot tell. For benchmarks and memory checks of loaders and of memory predictions.
std::int64_t resident_bytes();
std::int64_t peak_resident_bytes();
// Starts the peak over from the present resident size; false where the system keeps the peak
// for the process's whole life (Windows), and the peak then still counts from the start.
bool reset_peak_resident_bytes();

}  // namespace crucible
