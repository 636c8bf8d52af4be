// Windows pieces of platform.h. The POSIX twin is platform_posix.cpp.
#ifdef _WIN32
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>

#include <fstream>
#include <sstream>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/store/platform.h"

namespace crucible::store::platform {

bool is_network_filesystem(const std::filesystem::path& path) {
    std::error_code ec;
    std::filesystem::path full = std::filesystem::absolute(path, ec);
    if (ec) full = path;
    std::wstring text = full.wstring();
    // \\server\share\... and \\?\UNC\server\share\... are network paths.
    if (text.rfind(L"\\\\?\\UNC\\", 0) == 0) return true;
    if (text.rfind(L"\\\\", 0) == 0 && text.rfind(L"\\\\?\\", 0) != 0 &&
        text.rfind(L"\\\\.\\", 0) != 0)
        return true;
    std::wstring root = full.root_path().wstring();
    if (root.empty()) return false;
    if (root.back() != L'\\') root.push_back(L'\\');
    return GetDriveTypeW(root.c_str()) == DRIVE_REMOTE;
}

namespace {

// Locks one byte far beyond the owner text, so other processes can still read the text.
constexpr DWORD kLockOffsetHigh = 1;

class WindowsFileLock : public OsFileLock {
  public:
    explicit WindowsFileLock(HANDLE h) : h_(h) {}
    ~WindowsFileLock() override {
        OVERLAPPED ov{};
        ov.OffsetHigh = kLockOffsetHigh;
        UnlockFileEx(h_, 0, 1, 0, &ov);
        CloseHandle(h_);
    }
    void write_owner(const std::string& text) override {
        LARGE_INTEGER zero{};
        SetFilePointerEx(h_, zero, nullptr, FILE_BEGIN);
        DWORD written = 0;
        WriteFile(h_, text.data(), static_cast<DWORD>(text.size()), &written, nullptr);
        SetEndOfFile(h_);
    }

  private:
    HANDLE h_;
};

}  // namespace

std::unique_ptr<OsFileLock> try_lock_file(const std::filesystem::path& lock_file) {
    HANDLE h = CreateFileW(lock_file.wstring().c_str(), GENERIC_READ | GENERIC_WRITE,
                           FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                           OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, nullptr);
    if (h == INVALID_HANDLE_VALUE)
        throw Error(path_to_utf8(lock_file) + ": cannot create lock file (error " +
                    std::to_string(GetLastError()) + ")");
    OVERLAPPED ov{};
    ov.OffsetHigh = kLockOffsetHigh;
    if (!LockFileEx(h, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ov)) {
        DWORD err = GetLastError();
        CloseHandle(h);
        if (err == ERROR_LOCK_VIOLATION || err == ERROR_IO_PENDING) return nullptr;
        throw Error(path_to_utf8(lock_file) + ": cannot lock (error " + std::to_string(err) + ")");
    }
    return std::make_unique<WindowsFileLock>(h);
}

std::string read_lock_owner(const std::filesystem::path& lock_file) {
    std::ifstream in(lock_file, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace crucible::store::platform
#endif
