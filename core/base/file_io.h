#pragma once
// Files and paths. Paths are std::filesystem::path inside Crucible and UTF-8 strings at every
// edge (JSON, SQLite, the command line, the agent API), so Chinese and other non-ASCII file
// names work on Windows (where path::string() would use the ANSI code page) and on Linux.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/base/utf8.h"  // is_valid_utf8, which path_from_utf8 applies

namespace crucible {

// UTF-8 text of a path (generic separators kept as the platform has them).
std::string path_to_utf8(const std::filesystem::path& path);
// UTF-8 text of a path with '/' separators on every platform: relative names that leave the
// machine (S3 keys, artifact names of the agent API, audit lines). path::generic_string() would
// narrow to the ANSI code page on Windows and throw for a name outside it.
std::string path_to_generic_utf8(const std::filesystem::path& path);
// Path from UTF-8 text. Throws InputError if the text is not valid UTF-8.
std::filesystem::path path_from_utf8(std::string_view utf8);

// Whole file as bytes; InputError naming the file when it cannot be read or is a directory.
std::string read_file_bytes(const std::filesystem::path& path);
// Whole file, refusing files over max_bytes (hostile input never allocates unbounded memory).
std::string read_file_bytes_limited(const std::filesystem::path& path, std::uint64_t max_bytes);

// Writes `bytes` to `path` (created or truncated) and flushes it to the device: with direct I/O
// from kDirectWriteMinimum bytes where the file system takes it (direct_write.h), else through
// the file cache and fsync. Errors are Error starting with `where` (what the caller writes).
inline constexpr std::size_t kDirectWriteMinimum = std::size_t{1} << 20;
void write_file_durably(const std::filesystem::path& path, std::string_view bytes,
                        const std::string& where);

// Writes `bytes` so that `path` holds either the old content or the complete new one, never a
// mix: temp file in the same folder, write, flush, fsync, rename over, fsync the folder.
// Throws Error (with the OS reason, e.g. "No space left on device") and removes the temp file
// if any step fails; the previous file is untouched then.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);
// Makes `target` another name of the finished file `source` (a hard link; a copy on file systems
// without links), atomically: readers see the old target or the new one, never a partial file.
void link_or_copy_atomically(const std::filesystem::path& source,
                             const std::filesystem::path& target);

// True when `candidate` (after normalization) lies inside `root`. Used to refuse path traversal.
bool is_path_inside(const std::filesystem::path& root, const std::filesystem::path& candidate);

// Low-level platform pieces (file_io_posix.cpp / file_io_windows.cpp).
namespace platform {
// Flushes a written file to stable storage.
void fsync_file(const std::filesystem::path& path);
// Flushes a folder entry (rename durability); no-op where the OS has no such notion.
void fsync_folder(const std::filesystem::path& folder);
// Atomically replaces `to` by `from`. On Windows a target held open by another program is
// retried for up to kReplaceRetryMs (an antivirus scan or a download finishing) before failing.
inline constexpr unsigned long kReplaceRetryMs = 5000;
void replace_file(const std::filesystem::path& from, const std::filesystem::path& to);
// Current process id and host name, for lock messages ("opened by pid 42 on host X").
long process_id();
std::string host_name();
#ifdef _WIN32
// The system's text for a Windows error code (GetLastError()), without the trailing newline.
std::string windows_error_text(unsigned long code);
#endif
}  // namespace platform

}  // namespace crucible
