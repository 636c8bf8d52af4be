#pragma once
// Logging: spdlog to the console and, when a file is given, to a rotating log file.
// This header does not include spdlog: LibTorch 2.x ships its own, newer {fmt} in its include
// folder, which shadows the one Debian's spdlog is built with, so code that sees LibTorch's
// headers (core/engine, plugins) logs through the functions below instead of spdlog's.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace crucible {

struct LogOptions {
    std::string level = "info";  // trace, debug, info, warn, error
    std::filesystem::path file;  // empty: console only
    std::size_t max_file_bytes = 10u << 20;
    std::size_t max_files = 3;
    bool console = true;
    // Not empty: warnings and errors also go to the system's log under this source (the Windows
    // service's name: core/base/event_log.h), at most 30 a minute so that a flood of them cannot
    // crowd out the rest of the Application log; nothing on POSIX.
    std::string event_log_source;
};

// Installs the default logger. Safe to call again (replaces the previous one).
void init_logging(const LogOptions& options);

// One line to the default logger.
void log_info(std::string_view message);
void log_warn(std::string_view message);
void log_error(std::string_view message);

// The levels of log lines and of `log` events, with their one spelling ("debug", "info",
// "warning", "error"): the worker's events, the agent's and the studio's console use these.
enum class LogLevel { Debug, Info, Warning, Error };
const char* log_level_name(LogLevel level);
// Also takes "warn" (spdlog's spelling) and "trace" (as debug); nullopt for anything else.
std::optional<LogLevel> parse_log_level(std::string_view text);
// One line at `level` to the default logger.
void log_at(LogLevel level, std::string_view message);

// A setting as a log line shows it: up to 6 significant digits, no trailing zeros ("0.00125",
// "0.9", "0", "1e-08"), where std::to_string gives "0.001250", "0.900000" and "0.000000".
std::string log_number(double value);

}  // namespace crucible
