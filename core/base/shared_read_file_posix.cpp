// POSIX half of shared_read_file.h: a plain descriptor (a rename over the file never disturbs
// it). The Windows twin is shared_read_file_windows.cpp.
#ifndef _WIN32
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/shared_read_file.h"

namespace crucible {

SharedReadFile::SharedReadFile(const std::filesystem::path& path) : path_(path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw InputError(path_to_utf8(path),
                         "cannot open: " + std::generic_category().message(errno));
    handle_ = fd;
}

SharedReadFile::~SharedReadFile() {
    if (handle_ >= 0) ::close(static_cast<int>(handle_));
}

std::uint64_t SharedReadFile::size() const {
    struct stat st {};
    if (::fstat(static_cast<int>(handle_), &st) != 0)
        throw Error(path_to_utf8(path_) + ": " + std::generic_category().message(errno));
    return static_cast<std::uint64_t>(st.st_size);
}

std::size_t SharedReadFile::read_at(std::uint64_t offset, char* out, std::size_t length) const {
    for (;;) {
        const ssize_t n =
            ::pread(static_cast<int>(handle_), out, length, static_cast<off_t>(offset));
        if (n >= 0) return static_cast<std::size_t>(n);
        if (errno != EINTR)
            throw Error(path_to_utf8(path_) +
                        ": read failed: " + std::generic_category().message(errno));
    }
}

}  // namespace crucible
#endif
