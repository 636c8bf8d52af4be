#pragma once
// Asking crucible-worker something the agent, which never links LibTorch, cannot know itself:
// the task schemas (`describe`) and what CUDA sees (`devices`). The worker writes its answer as
// JSON to a file (`<command> --out FILE`): its stdout and stderr may carry LibTorch's warnings.
// It is started as any worker is, with no shell in between.
#include <chrono>
#include <filesystem>
#include <string>

#include "core/base/json.h"

namespace crucible::jobs {

// Runs `<worker> <command> --out <temp file>` and returns the file's JSON. Throws Error naming
// the worker and what went wrong (did not start, ended with an error, no answer within `limit`,
// not JSON).
Json query_worker(const std::filesystem::path& worker, const std::string& command,
                  std::chrono::seconds limit = std::chrono::seconds(120));

}  // namespace crucible::jobs
