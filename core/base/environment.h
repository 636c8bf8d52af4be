#pragma once
// What a process gets from its operating system, in UTF-8 on every platform: environment
// variables (POSIX getenv/setenv; Windows' wide-character calls, since the CRT's narrow ones use
// the ANSI code page and MSVC deprecates them), the command line (Windows passes main() its
// arguments in the ANSI code page, so "José" or a Chinese folder would arrive broken), the UTC
// calendar time, and where this program's executable lies, to find the programs beside it.
#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace crucible {

// The value of environment variable `name`, nullopt when unset.
std::optional<std::string> environment_variable(const std::string& name);
// Like environment_variable, but an empty value counts as unset.
std::optional<std::string> nonempty_environment_variable(const std::string& name);

// This program's arguments as UTF-8, argv[0] first. On Windows they are read again from the
// wide command line (GetCommandLineW) and `argv` is ignored; elsewhere they are argv itself.
std::vector<std::string> utf8_arguments(int argc, char** argv);
// `arg` quoted for a Windows command line by the rules CommandLineToArgvW and the MSVC runtime
// parse with (what utf8_arguments reads back): used to start workers and to register the service.
std::string quote_windows_argument(const std::string& arg);
// Makes a Windows console show this program's UTF-8 output (SetConsoleOutputCP); no-op elsewhere.
void use_utf8_console();

// `time` as UTC calendar time (gmtime_r / gmtime_s). Throws Error for a time the C library
// cannot represent.
std::tm utc_calendar_time(std::time_t time);
// `time` formatted with strftime's `format` in UTC, e.g. "%Y-%m-%d %H:%M:%SZ".
std::string utc_time_text(std::time_t time, const char* format);

// Sets `name` to `value`; when `overwrite` is false an existing value stays. Throws Error on
// failure.
void set_environment_variable(const std::string& name, const std::string& value,
                              bool overwrite = true);

// Removes `name` from this process's environment (no error when it was not set).
void unset_environment_variable(const std::string& name);

// The running executable (/proc/self/exe, GetModuleFileNameW). Throws Error when the system
// cannot tell.
std::filesystem::path this_executable();

// `name` (".exe" added on Windows) beside this executable, else in the build tree's
// ../<build_folder>/ (app/cli/crucible finds app/worker/crucible-worker), or in a multi-config
// tree (Visual Studio, Ninja Multi-Config) ../../<build_folder>/<Config>/ when this executable
// lies in a <Config> folder (app/cli/Release/crucible.exe); the first candidate when none exists,
// so the error names where it was looked for.
std::filesystem::path sibling_program(const std::string& name, const std::string& build_folder);

}  // namespace crucible
