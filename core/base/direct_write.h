#pragma once
// Writing a large file past the operating system's file cache: O_DIRECT on Linux,
// FILE_FLAG_NO_BUFFERING on Windows. Written the ordinary way, a checkpoint is copied by the
// kernel into newly allocated cache pages; on the virtual machines we measure on (free memory
// handed back to the host) that took 90-480 ms of kernel CPU for 64 MB, taken from the training
// threads while the checkpoint writer ran. Direct I/O moves the bytes by DMA: 2-3 ms of CPU. The
// platform parts are direct_write_posix.cpp and direct_write_windows.cpp.
#include <cstddef>
#include <filesystem>
#include <string_view>

namespace crucible {

// Creates or truncates `path`, writes `bytes` with direct I/O and flushes the file to the device.
// False when the file system or the platform takes no direct I/O (tmpfs, some network file
// systems, macOS): nothing is written then, the file may exist and be empty, and the caller
// writes it the ordinary way. Throws Error naming the file and the system's reason when a write
// fails otherwise (a full disk: "No space left on device").
bool write_file_direct(const std::filesystem::path& path, std::string_view bytes);

// Direct I/O wants block-aligned memory, sizes and offsets; 4096 covers the logical block sizes
// in use (512 and 4096 bytes). The bytes go through an aligned buffer of kDirectChunk bytes.
inline constexpr std::size_t kDirectBlock = 4096;
inline constexpr std::size_t kDirectChunk = std::size_t{8} << 20;

}  // namespace crucible
