#pragma once
// Jobs on the agent: their ids. The record itself is net::JobInfo (core/net/api_types.h), the
// type the API shows; its state machine is DESIGN.md "Jobs and reliability".
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/base/job_state.h"
#include "core/base/json.h"
#include "core/net/api_types.h"

namespace crucible::jobs {

using crucible::is_final_state;
using crucible::job_state_name;
using crucible::JobState;
using crucible::parse_job_state;
// A job as the agent keeps it (job.json) and shows it: the API type, one JSON mapping.
using net::JobInfo;

// Job ids are "j" + UTC time + random suffix: sortable and unguessable enough for folders.
std::string new_job_id();
// True for ids this agent could have made (letters, digits, '-'): the only ones used as folder
// names.
bool is_valid_job_id(const std::string& id);

}  // namespace crucible::jobs
