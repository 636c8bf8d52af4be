// Windows pieces of file_io.h (compiled on Windows and by the mingw-w64 check in CI).
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>

#include <string>

#include "core/base/error.h"
#include "core/base/file_io.h"

namespace crucible::platform {
std::string windows_error_text(unsigned long code) {
    char* text = nullptr;
    FormatMessageA(
        FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
        nullptr, static_cast<DWORD>(code), 0, reinterpret_cast<LPSTR>(&text), 0, nullptr);
    std::string out = text ? text : ("error " + std::to_string(code));
    if (text) LocalFree(text);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r'))
        out.pop_back();
    return out;
}

namespace {
std::string last_error_text() {
    return windows_error_text(GetLastError());
}
}  // namespace

void fsync_file(const std::filesystem::path& path) {
    HANDLE h = CreateFileW(path.c_str(), GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, nullptr,
                           OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
    if (h == INVALID_HANDLE_VALUE)
        throw Error(path_to_utf8(path) + ": cannot open for flush: " + last_error_text());
    BOOL ok = FlushFileBuffers(h);
    std::string err = ok ? "" : last_error_text();
    CloseHandle(h);
    if (!ok) throw Error(path_to_utf8(path) + ": flush failed: " + err);
}

void fsync_folder(const std::filesystem::path&) {
    // NTFS journals the rename itself (MOVEFILE_WRITE_THROUGH below); folders cannot be flushed.
}

void replace_file(const std::filesystem::path& from, const std::filesystem::path& to) {
    if (!MoveFileExW(from.c_str(), to.c_str(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
        throw Error(path_to_utf8(to) + ": replace failed: " + last_error_text());
}

long process_id() {
    return static_cast<long>(GetCurrentProcessId());
}

std::string host_name() {
    wchar_t buf[MAX_COMPUTERNAME_LENGTH + 1] = {};
    DWORD n = MAX_COMPUTERNAME_LENGTH + 1;
    if (!GetComputerNameW(buf, &n)) return "unknown-host";
    return path_to_utf8(std::filesystem::path(std::wstring(buf, n)));
}

}  // namespace crucible::platform
#endif
