#pragma once
// One job folder, run in this process: what `crucible-worker --job DIR [--resume]` and
// `crucible train` both do. spec.json = {"task": "detect.yolo", "options": {...}} (with
// "command": a task's command instead of training, command_job.h); the options
// are validated against the task's schema (messages name the option), logging goes to
// worker.log and the console, events to events.jsonl, and the last status event says why the
// job ended. Returns the worker exit code (trainer.h).
#include <filesystem>
#include <functional>

#include "core/base/json.h"
#include "core/base/rank_plan.h"

namespace crucible::engine {

struct JobOptions {
    bool resume = false;
    bool console = true;          // log to the console too
    bool install_signals = true;  // SIGTERM/SIGINT → checkpoint and stop
    RankAddress rank;             // a rank of a data-parallel run (rank_launcher starts them)
    // Called instead of training when the job asks for several ranks (device=0,1 or ranks=2)
    // and this process is not one of them: starts the ranks (core/jobs/rank_launcher.h),
    // returns the run's exit code. Unset: such a job fails with a message saying so.
    std::function<int(const RankPlan& plan)> launch_ranks;
};

int run_job(const std::filesystem::path& job_dir, const JobOptions& options = {});

// Validates spec.json's task and options; returns {task id, resolved config}. Throws InputError.
struct ResolvedSpec {
    std::string task;
    Json options;  // as given
    Json config;   // resolved
};
ResolvedSpec resolve_spec(const Json& spec, const std::string& where);

}  // namespace crucible::engine
