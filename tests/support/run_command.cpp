// POSIX-only test: runs command lines through popen and a POSIX shell (Windows twin: open work).
#include "tests/support/run_command.h"

#ifndef _WIN32
#include <sys/wait.h>

#include <cstdio>

namespace crucible::test_support {

CommandResult run_command(const std::string& command) {
    CommandResult r;
    const std::string merged = command + " 2>&1";
    FILE* pipe = popen(merged.c_str(), "r");
    if (!pipe) return r;
    char buffer[4096];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0)
        r.out.append(buffer, n);
    const int status = pclose(pipe);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

std::string shell_quote(const std::filesystem::path& path) {
    std::string out(1, '\'');
    out.append(path.string());
    out.push_back('\'');
    return out;
}

}  // namespace crucible::test_support
#endif
