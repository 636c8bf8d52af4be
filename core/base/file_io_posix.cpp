// POSIX pieces of file_io.h. The Windows twin is file_io_windows.cpp.
#ifndef _WIN32
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/base/error.h"
#include "core/base/file_io.h"

namespace crucible::platform {

void fsync_file(const std::filesystem::path& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(path.string() + ": cannot open for fsync: " + std::strerror(errno));
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) throw Error(path.string() + ": fsync failed: " + std::strerror(err));
}

void fsync_folder(const std::filesystem::path& folder) {
    int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;  // some filesystems refuse opening folders; the rename is still atomic
    ::fsync(fd);
    ::close(fd);
}

void replace_file(const std::filesystem::path& from, const std::filesystem::path& to) {
    if (std::rename(from.c_str(), to.c_str()) != 0)
        throw Error(to.string() + ": rename failed: " + std::strerror(errno));
}

long process_id() {
    return static_cast<long>(::getpid());
}

std::string host_name() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
    return buf;
}

}  // namespace crucible::platform
#endif
