// POSIX pieces of mapped_file.h. The Windows twin is mapped_file_windows.cpp.
#ifndef _WIN32
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/mapped_file.h"

namespace crucible {

MappedFile::MappedFile(const std::filesystem::path& path) {
    const std::string where = path_to_utf8(path);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw InputError(where, std::string("cannot open file: ") + std::strerror(errno));
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
        const int err = errno;
        ::close(fd);
        throw InputError(where, std::string("cannot stat file: ") + std::strerror(err));
    }
    if (!S_ISREG(info.st_mode)) {
        ::close(fd);
        throw InputError(
            where, S_ISDIR(info.st_mode) ? "is a directory, not a file" : "is not a regular file");
    }
    const auto size = static_cast<std::uint64_t>(info.st_size);
    if (size > std::numeric_limits<std::size_t>::max()) {
        ::close(fd);
        throw InputError(where, "file is too large to map into memory");
    }
    if (size == 0) {  // mmap refuses length 0; an empty file is an empty span
        ::close(fd);
        return;
    }
    void* p = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);  // the mapping keeps its own reference to the file
    if (p == MAP_FAILED)
        throw InputError(where, std::string("cannot map file: ") + std::strerror(err));
    data_ = static_cast<const std::byte*>(p);
    size_ = static_cast<std::size_t>(size);
}

void MappedFile::release() noexcept {
    if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
    data_ = nullptr;
    size_ = 0;
}

}  // namespace crucible
#endif
