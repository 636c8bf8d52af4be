#pragma once
// Crucible's one error type. Inside a layer code throws crucible::Error; at every boundary
// (API handler, worker main, CLI command, GUI action) it is caught and turned into a message
// that names the file, line or field at fault. Runtime input is never checked with assert().
#include <stdexcept>
#include <string>

namespace crucible {

class Error : public std::runtime_error {
  public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Input that the user can fix: a dataset row, an option, a file. `where` is a file path, a
// "file:line" or an option name; it leads the message so the user sees what to fix.
class InputError : public Error {
  public:
    InputError(std::string where, const std::string& what)
        : Error(where.empty() ? what : where + ": " + what), where_(std::move(where)) {}
    const std::string& where() const { return where_; }

  private:
    std::string where_;
};

// Runs `body` and turns any exception into a one-line message; returns the exit code
// (0 on success, 1 on a Crucible or standard error). Used by every executable's main. `body`
// gets the arguments as UTF-8 on every platform (utf8_arguments in environment.h), and a
// Windows console shows UTF-8 output.
int run_at_boundary(const char* program, int (*body)(int, char**), int argc, char** argv);

}  // namespace crucible
