// Windows half of environment.h (compiled on Windows and by the mingw-w64 check in CI).
#ifdef _WIN32
#include <windows.h>

#include <cstdlib>
#include <vector>

#include "core/base/environment.h"
#include "core/base/error.h"

namespace crucible {

void set_environment_variable(const std::string& name, const std::string& value, bool overwrite) {
    if (!overwrite) {
        char* existing = nullptr;
        std::size_t size = 0;
        const bool present = _dupenv_s(&existing, &size, name.c_str()) == 0 && existing != nullptr;
        std::free(existing);
        if (present) return;
    }
    if (_putenv_s(name.c_str(), value.c_str()) != 0) throw Error("cannot set " + name);
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
