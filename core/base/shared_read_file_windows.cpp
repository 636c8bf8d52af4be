// Windows half of shared_read_file.h: CreateFileW sharing read, write and delete, so the file
// can be replaced (renamed over) while this handle reads it.
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>

#include <algorithm>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/shared_read_file.h"

namespace crucible {
namespace {
HANDLE as_handle(std::intptr_t h) {
    return reinterpret_cast<HANDLE>(h);
}
}  // namespace

SharedReadFile::SharedReadFile(const std::filesystem::path& path) : path_(path) {
    HANDLE h = CreateFileW(path.c_str(), GENERIC_READ,
                           FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                           OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
    if (h == INVALID_HANDLE_VALUE)
        throw InputError(path_to_utf8(path),
                         "cannot open: " + platform::windows_error_text(GetLastError()));
    handle_ = reinterpret_cast<std::intptr_t>(h);
}

SharedReadFile::~SharedReadFile() {
    if (handle_ != -1) CloseHandle(as_handle(handle_));
}

std::uint64_t SharedReadFile::size() const {
    LARGE_INTEGER size{};
    if (!GetFileSizeEx(as_handle(handle_), &size))
        throw Error(path_to_utf8(path_) + ": " + platform::windows_error_text(GetLastError()));
    return static_cast<std::uint64_t>(size.QuadPart);
}

std::size_t SharedReadFile::read_at(std::uint64_t offset, char* out, std::size_t length) const {
    OVERLAPPED at{};
    at.Offset = static_cast<DWORD>(offset & 0xffffffffu);
    at.OffsetHigh = static_cast<DWORD>(offset >> 32);
    const DWORD chunk = static_cast<DWORD>(std::min<std::size_t>(length, 1u << 30));
    DWORD got = 0;
    if (!ReadFile(as_handle(handle_), out, chunk, &got, &at)) {
        const DWORD code = GetLastError();
        if (code == ERROR_HANDLE_EOF) return 0;
        throw Error(path_to_utf8(path_) + ": read failed: " + platform::windows_error_text(code));
    }
    return got;
}

}  // namespace crucible
#endif
