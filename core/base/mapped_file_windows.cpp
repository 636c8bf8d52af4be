// Windows pieces of mapped_file.h (compiled on Windows and by the mingw-w64 check in CI).
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>

#include <cstdint>
#include <limits>
#include <string>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/mapped_file.h"

namespace crucible {
using platform::windows_error_text;

MappedFile::MappedFile(const std::filesystem::path& path) {
    const std::string where = path_to_utf8(path);
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw InputError(where, "is a directory, not a file");
    // path.c_str() is UTF-16 on Windows, so Chinese and other non-ASCII names open correctly.
    HANDLE file = CreateFileW(path.c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_DELETE,
                              nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
    if (file == INVALID_HANDLE_VALUE)
        throw InputError(where, "cannot open file: " + windows_error_text(GetLastError()));
    LARGE_INTEGER size{};
    if (!GetFileSizeEx(file, &size)) {
        const DWORD err = GetLastError();
        CloseHandle(file);
        throw InputError(where, "cannot read file size: " + windows_error_text(err));
    }
    const auto bytes = static_cast<std::uint64_t>(size.QuadPart);
    if (bytes > std::numeric_limits<std::size_t>::max()) {
        CloseHandle(file);
        throw InputError(where, "file is too large to map into memory");
    }
    if (bytes == 0) {  // CreateFileMapping refuses empty files; an empty file is an empty span
        CloseHandle(file);
        return;
    }
    HANDLE mapping = CreateFileMappingW(file, nullptr, PAGE_READONLY, 0, 0, nullptr);
    const DWORD map_err = GetLastError();
    CloseHandle(file);  // the mapping object keeps the file open
    if (mapping == nullptr)
        throw InputError(where, "cannot map file: " + windows_error_text(map_err));
    void* view = MapViewOfFile(mapping, FILE_MAP_READ, 0, 0, 0);
    const DWORD view_err = GetLastError();
    CloseHandle(mapping);  // the view keeps the mapping alive
    if (view == nullptr)
        throw InputError(where, "cannot map file: " + windows_error_text(view_err));
    data_ = static_cast<const std::byte*>(view);
    size_ = static_cast<std::size_t>(bytes);
}

void MappedFile::release() noexcept {
    if (data_ != nullptr) UnmapViewOfFile(data_);
    data_ = nullptr;
    size_ = 0;
}

}  // namespace crucible
#endif
