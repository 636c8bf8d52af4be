#pragma once
// crucible-worker's command line after the program name, written by whoever starts a worker (the
// agent's scheduler, the rank launcher) and read by the worker programs (crucible-worker, the
// tests' toy worker): --job DIR [--resume] [the rank arguments of rank_plan.h].
#include <filesystem>
#include <string>
#include <vector>

#include "core/base/rank_plan.h"

namespace crucible {

struct WorkerArguments {
    std::filesystem::path job;
    bool resume = false;
    RankAddress rank;  // a rank of a data-parallel run; the default: not one
};

// --job DIR [--resume] for a job folder.
std::vector<std::string> worker_job_arguments(const std::filesystem::path& job_dir, bool resume);

// Throws InputError naming the argument that is unknown, lacks its value or is malformed, and
// when --job is missing.
WorkerArguments parse_worker_arguments(const std::vector<std::string>& args);

}  // namespace crucible
