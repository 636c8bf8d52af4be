// POSIX half of environment.h. The Windows twin is environment_windows.cpp.
#ifndef _WIN32
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/base/environment.h"
#include "core/base/error.h"

namespace crucible {

void set_environment_variable(const std::string& name, const std::string& value, bool overwrite) {
    if (::setenv(name.c_str(), value.c_str(), overwrite ? 1 : 0) != 0)
        throw Error("cannot set " + name + ": " + std::strerror(errno));
}

std::filesystem::path this_executable() {
    std::error_code ec;
    auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) throw Error("cannot find this program's executable: " + ec.message());
    return path;
}

}  // namespace crucible
#endif
