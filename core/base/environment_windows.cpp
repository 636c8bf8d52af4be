// Windows half of environment.h (compiled on Windows, by the mingw-w64 check and in the wine
// tests in CI). Wide-character calls only: the narrow CRT ones use the ANSI code page.
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>
// After windows.h, which they need.
#include <shellapi.h>

#include <vector>

#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/wide_text_windows.h"

namespace crucible {
namespace {

using platform::utf8_from_wide;
using platform::wide_from_utf8;

}  // namespace

std::optional<std::string> environment_variable(const std::string& name) {
    const std::wstring key = wide_from_utf8(name);
    std::vector<wchar_t> buffer(256);
    for (;;) {
        SetLastError(ERROR_SUCCESS);
        const DWORD n =
            GetEnvironmentVariableW(key.c_str(), buffer.data(), static_cast<DWORD>(buffer.size()));
        if (n == 0)
            return GetLastError() == ERROR_ENVVAR_NOT_FOUND ? std::nullopt
                                                            : std::optional<std::string>("");
        if (n < buffer.size()) return utf8_from_wide(std::wstring(buffer.data(), n));
        buffer.resize(n);  // n is the size needed, terminator included
    }
}

std::vector<std::string> utf8_arguments(int, char**) {
    int count = 0;
    LPWSTR* wide_args = CommandLineToArgvW(GetCommandLineW(), &count);
    if (!wide_args) throw Error("cannot read this program's command line (CommandLineToArgvW)");
    std::vector<std::string> out;
    out.reserve(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i)
        out.push_back(utf8_from_wide(wide_args[i]));
    LocalFree(wide_args);
    return out;
}

void use_utf8_console() {
    SetConsoleOutputCP(CP_UTF8);
}

std::tm utc_calendar_time(std::time_t time) {
    std::tm tm{};
    if (gmtime_s(&tm, &time) != 0)
        throw Error("time " + std::to_string(time) + " cannot be shown as a UTC date");
    return tm;
}

void set_environment_variable(const std::string& name, const std::string& value, bool overwrite) {
    const std::wstring key = wide_from_utf8(name);
    if (!overwrite && GetEnvironmentVariableW(key.c_str(), nullptr, 0) != 0) return;
    // The process block (what children inherit and GetEnvironmentVariableW reads) and the CRT's
    // copy (what libraries calling getenv read, e.g. cuBLAS) are separate on Windows: set both.
    if (!SetEnvironmentVariableW(key.c_str(), wide_from_utf8(value).c_str()))
        throw Error("cannot set " + name + ": " + platform::windows_error_text(GetLastError()));
    if (_wputenv_s(key.c_str(), wide_from_utf8(value).c_str()) != 0)
        throw Error("cannot set " + name);
}

void unset_environment_variable(const std::string& name) {
    const std::wstring key = wide_from_utf8(name);
    SetEnvironmentVariableW(key.c_str(), nullptr);
    _wputenv_s(key.c_str(), L"");  // an empty value removes it from the CRT's copy
}

std::filesystem::path this_executable() {
    std::vector<wchar_t> buffer(32768);
    const DWORD n = GetModuleFileNameW(nullptr, buffer.data(), static_cast<DWORD>(buffer.size()));
    if (n == 0 || n >= buffer.size())
        throw Error("cannot find this program's executable (GetModuleFileNameW failed)");
    return std::filesystem::path(std::wstring(buffer.data(), n));
}

}  // namespace crucible
#endif
