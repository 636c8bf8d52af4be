// POSIX pieces of platform.h. The Windows twin is platform_windows.cpp.
#ifndef _WIN32
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/vfs.h>
#else
#include <sys/mount.h>
#include <sys/param.h>
#endif

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/store/platform.h"

namespace crucible::store::platform {

bool is_network_filesystem(const std::filesystem::path& path) {
    std::error_code ec;
    std::filesystem::path probe = path;
    if (!std::filesystem::exists(probe, ec)) probe = probe.parent_path();
    if (probe.empty()) probe = ".";
    struct statfs st {};
    if (::statfs(probe.c_str(), &st) != 0) return false;
#if defined(__linux__)
    switch (static_cast<unsigned long>(st.f_type) & 0xffffffffUL) {
        case 0x6969UL:      // NFS
        case 0x517BUL:      // SMB
        case 0xFF534D42UL:  // CIFS
        case 0xFE534D42UL:  // SMB2
        case 0x564CUL:      // NCP
        case 0x5346414FUL:  // AFS
        case 0x73757245UL:  // CODA
        case 0x00C36400UL:  // CEPH
        case 0x0BD00BD0UL:  // Lustre
        case 0x01021997UL:  // 9P (also WSL's Windows drives)
            return true;
        default:
            return false;
    }
#else
    std::string type = st.f_fstypename;
    return type == "nfs" || type == "smbfs" || type == "afpfs" || type == "webdav" ||
           type == "cifs";
#endif
}

namespace {

class PosixFileLock : public OsFileLock {
  public:
    PosixFileLock(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
    ~PosixFileLock() override {
        // Unlink while still holding the lock: a process that opened the old file and waits
        // for it re-checks the inode after locking and retries on the new file.
        ::unlink(path_.c_str());
        ::close(fd_);
    }
    void write_owner(const std::string& text) override {
        if (::ftruncate(fd_, 0) != 0) return;
        [[maybe_unused]] ssize_t n = ::pwrite(fd_, text.data(), text.size(), 0);
    }

  private:
    int fd_;
    std::filesystem::path path_;
};

}  // namespace

std::unique_ptr<OsFileLock> try_lock_file(const std::filesystem::path& lock_file) {
    for (int attempt = 0; attempt < 10; ++attempt) {
        int fd = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
            throw Error(path_to_utf8(lock_file) +
                        ": cannot create lock file: " + std::strerror(errno));
        if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int err = errno;
            ::close(fd);
            if (err == EWOULDBLOCK || err == EAGAIN) return nullptr;
            throw Error(path_to_utf8(lock_file) + ": cannot lock: " + std::strerror(err));
        }
        // The holder may have unlinked the file between our open and flock: then we hold a lock
        // on a dead inode and must retry on the path's current file.
        struct stat held {
        }, now{};
        if (::fstat(fd, &held) == 0 && ::stat(lock_file.c_str(), &now) == 0 &&
            held.st_ino == now.st_ino && held.st_dev == now.st_dev)
            return std::make_unique<PosixFileLock>(fd, lock_file);
        ::close(fd);
    }
    throw Error(path_to_utf8(lock_file) + ": lock file keeps changing; try again");
}

std::string read_lock_owner(const std::filesystem::path& lock_file) {
    std::ifstream in(lock_file, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace crucible::store::platform
#endif
