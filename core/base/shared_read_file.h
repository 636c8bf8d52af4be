#pragma once
// A file opened for reading that never stands in the way of its writer: on Windows it is opened
// with FILE_SHARE_DELETE (std::ifstream is not), so a trainer can replace results.csv or
// last.safetensors (temp file + rename, write_file_atomically) while a client downloads or
// follows it; the reader keeps the version it opened, as on POSIX. The platform parts are
// shared_read_file_posix.cpp and shared_read_file_windows.cpp.
#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace crucible {

class SharedReadFile {
  public:
    // Throws InputError naming the file when it cannot be opened.
    explicit SharedReadFile(const std::filesystem::path& path);
    ~SharedReadFile();
    SharedReadFile(const SharedReadFile&) = delete;
    SharedReadFile& operator=(const SharedReadFile&) = delete;

    // Size of the version this handle reads.
    std::uint64_t size() const;
    // Reads up to `length` bytes at `offset` into `out`; the count read (0 at the end). Throws
    // Error on a read failure.
    std::size_t read_at(std::uint64_t offset, char* out, std::size_t length) const;

  private:
    std::filesystem::path path_;
    std::intptr_t handle_ = -1;  // a file descriptor or a HANDLE
};

}  // namespace crucible
