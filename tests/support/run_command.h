#pragma once
// Runs a shell command for end-to-end tests of the built executables (POSIX: popen). stderr is
// merged into the output so failures show the program's message.
#include <filesystem>
#include <string>

namespace crucible::test_support {

struct CommandResult {
    int code = -1;  // exit status; -1 when the command could not start or died by a signal
    std::string out;
};

CommandResult run_command(const std::string& command);

// `path` in single quotes for the shell.
std::string shell_quote(const std::filesystem::path& path);

}  // namespace crucible::test_support
