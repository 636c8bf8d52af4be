#pragma once
// Logging: spdlog to the console and, when a file is given, to a rotating log file.
#include <spdlog/spdlog.h>

#include <filesystem>
#include <string>

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

}  // namespace crucible
