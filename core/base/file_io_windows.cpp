// Windows pieces of file_io.h (compiled on Windows and by the mingw-w64 check in CI).
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/wide_text_windows.h"

namespace crucible::platform {
std::wstring wide_from_utf8(const std::string& utf8) {
    return path_from_utf8(utf8).wstring();
}

std::string utf8_from_wide(const std::wstring& text) {
    return path_to_utf8(std::filesystem::path(text));
}

std::string windows_error_text(unsigned long code) {
    // The wide call: FormatMessageA answers in the ANSI code page, which is not UTF-8 on a
    // Chinese or Polish Windows.
    wchar_t* text = nullptr;
    FormatMessageW(
        FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
        nullptr, static_cast<DWORD>(code), 0, reinterpret_cast<LPWSTR>(&text), 0, nullptr);
    std::string out = text ? path_to_utf8(std::filesystem::path(std::wstring(text)))
                           : ("error " + std::to_string(code));
    if (text) LocalFree(text);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == ' '))
        out.pop_back();
    return out;
}

std::string admin_failure(const std::string& what, unsigned long code) {
    std::string text = what + ": " + windows_error_text(code);
    if (code == ERROR_ACCESS_DENIED) text += " (run it from an administrator prompt)";
    return text;
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

namespace {

// FILE_RENAME_INFO as Windows 10 1607 and later define it (Flags instead of ReplaceIfExists);
// spelled out because older SDK and mingw-w64 headers have only the BOOLEAN form.
struct RenameInfoEx {
    DWORD flags;
    HANDLE root_directory;
    DWORD file_name_length;
    WCHAR file_name[1];
};
constexpr DWORD kRenameReplaceIfExists = 0x1;  // FILE_RENAME_FLAG_REPLACE_IF_EXISTS
constexpr DWORD kRenamePosixSemantics = 0x2;   // FILE_RENAME_FLAG_POSIX_SEMANTICS
constexpr auto kFileRenameInfoEx = static_cast<FILE_INFO_BY_HANDLE_CLASS>(22);

// The rename POSIX programs get: the old target's name is freed at once even while readers
// (opened with FILE_SHARE_DELETE, as SharedReadFile does) hold it, and they keep reading the old
// version. NTFS on Windows 10 1709 and later; false where the system or file system refuses.
bool rename_with_posix_semantics(const std::filesystem::path& from,
                                 const std::filesystem::path& to) {
    HANDLE h = CreateFileW(from.c_str(), DELETE | SYNCHRONIZE,
                           FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                           OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
    if (h == INVALID_HANDLE_VALUE) return false;
    const std::wstring target = std::filesystem::absolute(to).wstring();
    const std::size_t name_bytes = target.size() * sizeof(wchar_t);
    std::vector<char> buffer(sizeof(RenameInfoEx) + name_bytes);
    auto* info = reinterpret_cast<RenameInfoEx*>(buffer.data());
    info->flags = kRenameReplaceIfExists | kRenamePosixSemantics;
    info->root_directory = nullptr;
    info->file_name_length = static_cast<DWORD>(name_bytes);
    std::memcpy(info->file_name, target.data(), name_bytes);
    const BOOL ok =
        SetFileInformationByHandle(h, kFileRenameInfoEx, info, static_cast<DWORD>(buffer.size()));
    CloseHandle(h);
    return ok != FALSE;
}

}  // namespace

void replace_file(const std::filesystem::path& from, const std::filesystem::path& to) {
    if (rename_with_posix_semantics(from, to)) {
        // MoveFileEx's MOVEFILE_WRITE_THROUGH, for this path: the rename is on disk.
        fsync_file(to);
        return;
    }
    // A reader without FILE_SHARE_DELETE (a download in progress, an editor, Defender or the
    // indexer scanning the new file) makes the rename fail for as long as it holds the file.
    // Those holds are short: retry for up to kReplaceRetryMs before giving up.
    DWORD waited_ms = 0;
    for (DWORD pause_ms = 10;; pause_ms = pause_ms < 200 ? pause_ms * 2 : 200) {
        if (MoveFileExW(from.c_str(), to.c_str(),
                        MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
            return;
        const DWORD code = GetLastError();
        const bool transient = code == ERROR_SHARING_VIOLATION || code == ERROR_ACCESS_DENIED ||
                               code == ERROR_LOCK_VIOLATION;
        if (!transient || waited_ms >= kReplaceRetryMs)
            throw Error(
                path_to_utf8(to) + ": replace failed" +
                (transient ? " after " + std::to_string(waited_ms) + " ms of retries" : "") + ": " +
                windows_error_text(code));
        Sleep(pause_ms);
        waited_ms += pause_ms;
    }
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
