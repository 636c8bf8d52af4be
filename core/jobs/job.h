#pragma once
// A job on the agent: its spec (task + options, what the worker reads from spec.json), its
// state machine (DESIGN.md "Jobs and reliability") and the folder that holds everything.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/base/job_state.h"
#include "core/base/json.h"

namespace crucible::jobs {

using crucible::is_final_state;
using crucible::job_state_name;
using crucible::JobState;
using crucible::parse_job_state;

struct JobRecord {
    std::string id;
    std::string name;  // user label
    std::string task;  // "detect.yolo"
    Json options = Json::object();
    int priority = 0;  // higher first; FIFO within a priority
    int gpus = 0;      // GPUs asked for (0 = CPU or any one GPU when present, see scheduler)
    JobState state = JobState::Queued;
    std::string reason;  // why it ended / was interrupted
    double submitted = 0, started = 0, finished = 0;
    std::vector<int> gpu_ids;          // assigned while running
    std::optional<int> requested_gpu;  // the GPU (agent index) asked for; none: any free one
    long pid = 0;
    bool resume = false;  // next start continues from the last checkpoint
    std::string submitted_by;

    Json to_json() const;
    static JobRecord from_json(const Json& json, const std::string& where);
};

// Validates the submit body: {"task": str, "options": obj, "name"?, "priority"?, "gpus"?,
// "gpu"? (one GPU by the agent's index, which implies gpus = 1)}.
// Throws InputError naming the field.
JobRecord job_from_submit(const Json& body);

// Job ids are "j" + UTC time + random suffix: sortable and unguessable enough for folders.
std::string new_job_id();
// True for ids this agent could have made (letters, digits, '-'): the only ones used as folder
// names.
bool is_valid_job_id(const std::string& id);

}  // namespace crucible::jobs
