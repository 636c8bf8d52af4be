#pragma once
// Logging: spdlog to the console and, when a file is given, to a rotating log file.
// This header does not include spdlog: LibTorch 2.x ships its own, newer {fmt} in its include
// folder, which shadows the one Debian's spdlog is built with, so code that sees LibTorch's
// headers (core/engine, plugins) logs through the functions below instead of spdlog's.
#include <filesystem>
#include <string>
#include <string_view>

namespace crucible {

struct LogOptions {
    std::string level = "info";  // trace, debug, info, warn, error
    std::filesystem::path file;  // empty: console only
    std::size_t max_file_bytes = 10u << 20;
    std::size_t max_files = 3;
    bool console = true;
};

// Installs the default logger. Safe to call again (replaces the previous one).
void init_logging(const LogOptions& options);

// One line to the default logger.
void log_info(std::string_view message);
void log_warn(std::string_view message);
void log_error(std::string_view message);

}  // namespace crucible
