#pragma once
// Setting an environment variable of this process (POSIX setenv, Windows _putenv_s), for the
// variables CUDA libraries read once, when they start (CUBLAS_WORKSPACE_CONFIG).
#include <string>

namespace crucible {

// Sets `name` to `value`; when `overwrite` is false an existing value stays. Throws Error on
// failure.
void set_environment_variable(const std::string& name, const std::string& value,
                              bool overwrite = true);

}  // namespace crucible
