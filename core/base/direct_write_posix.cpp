// POSIX half of direct_write.h. The Windows twin is direct_write_windows.cpp.
#ifndef _WIN32
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

#include "core/base/direct_write.h"
#include "core/base/error.h"

namespace crucible {

namespace {

struct FreeDeleter {
    void operator()(char* p) const { std::free(p); }
};

// Closes the descriptor on every way out.
class Descriptor {
  public:
    explicit Descriptor(int fd) : fd_(fd) {}
    ~Descriptor() {
        if (fd_ >= 0) ::close(fd_);
    }
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
    int get() const { return fd_; }
    int release() { return std::exchange(fd_, -1); }

  private:
    int fd_;
};

[[noreturn]] void fail(const std::filesystem::path& path, const char* what, int err) {
    throw Error(path.string() + ": " + what + ": " + std::strerror(err));
}

}  // namespace

bool write_file_direct(const std::filesystem::path& path, std::string_view bytes) {
#if defined(O_DIRECT)
    Descriptor fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_DIRECT, 0666));
    if (fd.get() < 0) {
        if (errno == EINVAL) return false;  // the file system takes no direct I/O
        fail(path, "cannot open for writing", errno);
    }
    void* raw = nullptr;
    if (::posix_memalign(&raw, kDirectBlock, kDirectChunk) != 0)
        throw Error(path.string() + ": no memory for the write buffer");
    const std::unique_ptr<char, FreeDeleter> buffer(static_cast<char*>(raw));
    for (std::size_t done = 0; done < bytes.size();) {
        const std::size_t n = std::min(kDirectChunk, bytes.size() - done);
        // The last block is padded with zeros; the file is cut to its size below.
        const std::size_t padded = (n + kDirectBlock - 1) / kDirectBlock * kDirectBlock;
        std::memcpy(buffer.get(), bytes.data() + done, n);
        std::memset(buffer.get() + n, 0, padded - n);
        for (std::size_t written = 0; written < padded;) {
            const ssize_t w = ::write(fd.get(), buffer.get() + written, padded - written);
            if (w < 0 && errno == EINTR) continue;
            if (w < 0 && errno == EINVAL && done == 0 && written == 0)
                return false;  // the alignment or direct I/O itself refused at the first write
            if (w < 0) fail(path, "write failed", errno);
            if (w == 0) fail(path, "write failed", EIO);
            written += static_cast<std::size_t>(w);
        }
        done += n;
    }
    if (::ftruncate(fd.get(), static_cast<off_t>(bytes.size())) != 0)
        fail(path, "cannot set the file's size", errno);
    if (::fsync(fd.get()) != 0) fail(path, "fsync failed", errno);
    if (::close(fd.release()) != 0) fail(path, "close failed", errno);
    return true;
#else
    (void)path;
    (void)bytes;
    return false;  // macOS has F_NOCACHE instead; the ordinary write is kept there
#endif
}

}  // namespace crucible
#endif
