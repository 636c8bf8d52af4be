#pragma once
// Setting an environment variable of this process (POSIX setenv, Windows _putenv_s), for the
// variables CUDA libraries read once, when they start (CUBLAS_WORKSPACE_CONFIG); and where this
// program's executable lies, to find the programs installed beside it.
#include <filesystem>
#include <string>

namespace crucible {

// Sets `name` to `value`; when `overwrite` is false an existing value stays. Throws Error on
// failure.
void set_environment_variable(const std::string& name, const std::string& value,
                              bool overwrite = true);

// The running executable (/proc/self/exe, GetModuleFileNameW). Throws Error when the system
// cannot tell.
std::filesystem::path this_executable();

// `name` (".exe" added on Windows) beside this executable, else in the build tree's
// ../<build_folder>/ (app/cli/crucible finds app/worker/crucible-worker); the first candidate
// when neither exists, so the error names where it was looked for.
std::filesystem::path sibling_program(const std::string& name, const std::string& build_folder);

}  // namespace crucible
