// POSIX half of environment.h. The Windows twin is environment_windows.cpp.
#ifndef _WIN32
#include <cerrno>
#include <cstdlib>
#include <system_error>

#include "core/base/environment.h"
#include "core/base/error.h"

namespace crucible {

std::optional<std::string> environment_variable(const std::string& name) {
    if (const char* value = std::getenv(name.c_str())) return std::string(value);
    return std::nullopt;
}

std::vector<std::string> utf8_arguments(int argc, char** argv) {
    return std::vector<std::string>(argv, argv + argc);
}

void use_utf8_console() {}

std::tm utc_calendar_time(std::time_t time) {
    std::tm tm{};
    if (!::gmtime_r(&time, &tm))
        throw Error("time " + std::to_string(time) + " cannot be shown as a UTC date");
    return tm;
}

void set_environment_variable(const std::string& name, const std::string& value, bool overwrite) {
    if (::setenv(name.c_str(), value.c_str(), overwrite ? 1 : 0) != 0)
        throw Error("cannot set " + name + ": " + std::generic_category().message(errno));
}

void unset_environment_variable(const std::string& name) {
    if (::unsetenv(name.c_str()) != 0)
        throw Error("cannot unset " + name + ": " + std::generic_category().message(errno));
}

std::filesystem::path this_executable() {
    std::error_code ec;
    auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) throw Error("cannot find this program's executable: " + ec.message());
    return path;
}

}  // namespace crucible
#endif
