#pragma once
// The generic training loop (DESIGN.md "Task plugins", SPECS.md "YOLOv8"): epochs and steps,
// nbs gradient accumulation ramped during warmup, AMP with dynamic loss scaling on CUDA,
// gradient clipping, EMA, warmup and linear/cosine LR, three parameter groups, optimizer=auto,
// early stopping, events, results.csv, best/last weights, checkpoints, exact resume, and stop
// requests. Tasks plug in through task.h.
#include <memory>
#include <string>

#include "core/base/event.h"
#include "core/base/job_state.h"
#include "core/base/json.h"
#include "core/base/rank_plan.h"
#include "core/engine/run_folder.h"
#include "core/engine/task.h"

namespace crucible::engine {

struct TrainOutcome {
    JobState state = JobState::Failed;  // succeeded, failed, canceled, paused, interrupted
    std::string reason;  // finished, early stopping ..., out of memory ..., the error message
    int exit_code = worker_exit_code(JobState::Failed);  // crucible-worker's (job_state.h)
    int epochs_done = 0;
    double best_fitness = 0;
};

class Trainer {
  public:
    // `config` is resolved against the task's schema. `events` is the job's events.jsonl. A
    // rank of a data-parallel run (rank.world_size > 1) meets the others first; only rank 0
    // writes events, results.csv, weights, checkpoints and artifacts: the other ranks pass no
    // event writer (opening events.jsonl would cut rank 0's line being written).
    Trainer(Task& task, const TaskInfo& info, Json config, JobFolder paths, EventLogWriter* events,
            RankAddress rank = {});
    ~Trainer();
    Trainer(const Trainer&) = delete;
    Trainer& operator=(const Trainer&) = delete;

    // Trains (from the newest valid checkpoint when `resume`); never throws: every failure ends
    // in a final status event and the outcome.
    TrainOutcome run(bool resume);

    struct Impl;

  private:
    std::unique_ptr<Impl> impl_;
};

// SHA-256 of the resolved config without the location options (project, name, ...).
std::string config_hash(const Json& config);

}  // namespace crucible::engine
