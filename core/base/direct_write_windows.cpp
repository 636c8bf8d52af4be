// Windows half of direct_write.h. The POSIX twin is direct_write_posix.cpp.
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>

#include <algorithm>
#include <cstring>

#include "core/base/direct_write.h"
#include "core/base/error.h"
#include "core/base/file_io.h"

namespace crucible {

namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const char* what, DWORD code) {
    throw Error(path_to_utf8(path) + ": " + what + ": " + platform::windows_error_text(code));
}

// Closes the handle and frees the buffer on every way out.
struct Resources {
    HANDLE file = INVALID_HANDLE_VALUE;
    void* buffer = nullptr;
    ~Resources() {
        if (file != INVALID_HANDLE_VALUE) CloseHandle(file);
        if (buffer) VirtualFree(buffer, 0, MEM_RELEASE);
    }
};

}  // namespace

bool write_file_direct(const std::filesystem::path& path, std::string_view bytes) {
    Resources r;
    r.file = CreateFileW(path.c_str(), GENERIC_WRITE, 0, nullptr, CREATE_ALWAYS,
                         FILE_ATTRIBUTE_NORMAL | FILE_FLAG_NO_BUFFERING | FILE_FLAG_WRITE_THROUGH,
                         nullptr);
    if (r.file == INVALID_HANDLE_VALUE) {
        const DWORD code = GetLastError();
        if (code == ERROR_INVALID_PARAMETER || code == ERROR_NOT_SUPPORTED) return false;
        fail(path, "cannot open for writing", code);
    }
    // VirtualAlloc's pages are aligned for every sector size up to 4096.
    r.buffer = VirtualAlloc(nullptr, kDirectChunk, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
    if (!r.buffer) fail(path, "no memory for the write buffer", GetLastError());
    char* buffer = static_cast<char*>(r.buffer);
    for (std::size_t done = 0; done < bytes.size();) {
        const std::size_t n = std::min(kDirectChunk, bytes.size() - done);
        const std::size_t padded = (n + kDirectBlock - 1) / kDirectBlock * kDirectBlock;
        std::memcpy(buffer, bytes.data() + done, n);
        std::memset(buffer + n, 0, padded - n);
        DWORD written = 0;
        if (!WriteFile(r.file, buffer, static_cast<DWORD>(padded), &written, nullptr)) {
            const DWORD code = GetLastError();
            if (code == ERROR_INVALID_PARAMETER && done == 0) return false;
            fail(path, "write failed", code);
        }
        if (written != padded) fail(path, "write failed", ERROR_WRITE_FAULT);
        done += n;
    }
    // The zero padding of the last block goes.
    FILE_END_OF_FILE_INFO end{};
    end.EndOfFile.QuadPart = static_cast<LONGLONG>(bytes.size());
    if (!SetFileInformationByHandle(r.file, FileEndOfFileInfo, &end, sizeof end))
        fail(path, "cannot set the file's size", GetLastError());
    if (!FlushFileBuffers(r.file)) fail(path, "flush failed", GetLastError());
    return true;
}

}  // namespace crucible
#endif
