#pragma once
// A read-only memory map of a whole file (RAII). Used by readers of large binary files
// (safetensors) so tensor bytes are paged in on demand instead of copied. The platform pieces
// live in mapped_file_posix.cpp (mmap) and mapped_file_windows.cpp (CreateFileMappingW).
//
// The mapping shows the file as it is on disk: if another process truncates the file while it
// is mapped, reading past the new end faults (SIGBUS). Crucible writes files atomically
// (temp + rename), which never truncates a mapped file in place.
#include <cstddef>
#include <filesystem>
#include <span>
#include <utility>

namespace crucible {

class MappedFile {
  public:
    MappedFile() = default;
    // Maps `path` read-only. Throws InputError naming the file when it is missing, a directory,
    // unreadable or too large for the address space. An empty file maps to an empty span.
    explicit MappedFile(const std::filesystem::path& path);
    ~MappedFile() { release(); }

    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    MappedFile(MappedFile&& other) noexcept
        : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
    MappedFile& operator=(MappedFile&& other) noexcept {
        if (this != &other) {
            release();
            data_ = std::exchange(other.data_, nullptr);
            size_ = std::exchange(other.size_, 0);
        }
        return *this;
    }

    const std::byte* data() const { return data_; }
    std::size_t size() const { return size_; }
    std::span<const std::byte> bytes() const { return {data_, size_}; }

  private:
    void release() noexcept;  // unmaps; safe on an empty object

    const std::byte* data_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace crucible
