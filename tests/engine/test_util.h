#pragma once
// Helpers for the engine run tests: job folders of the toy task, reading their outputs, and
// running the toy worker as a child process.
#include <filesystem>
#include <string>
#include <vector>

#include "core/base/event.h"
#include "core/base/json.h"

namespace crucible::engine::testing {

std::filesystem::path fresh_dir(const std::string& name);
// Writes spec.json for the toy task with these options.
void write_toy_spec(const std::filesystem::path& dir, const Json& options);
// run_job in this process, console off, no signal handlers.
int run_in_process(const std::filesystem::path& dir, bool resume = false);

std::vector<Event> events_of(const std::filesystem::path& dir);
// results.csv cells, header trimmed; `drop_time` removes the `time` column.
std::vector<std::vector<std::string>> csv_of(const std::filesystem::path& dir,
                                             bool drop_time = true);
std::string weights_sha(const std::filesystem::path& dir, const std::string& name = "last");

struct ChildResult {
    bool killed = false;  // died by SIGKILL (fault injection)
    int exit_code = -1;
};
// Runs engine_toy_worker --job DIR [--resume] with CRUCIBLE_FAULT=fault (empty: none).
ChildResult run_child(const std::filesystem::path& dir, bool resume, const std::string& fault);

}  // namespace crucible::engine::testing
