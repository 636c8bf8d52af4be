#pragma once
// A job that runs one of its task's commands instead of training: `predict` on an agent, so the
// studio pre-labels with the server's GPU. spec.json = {"task": "detect.yolo", "command":
// "predict", "options": {...}}. Only a command that names its output option
// (TaskCommand::output_option) runs as a job: the agent refuses that option, and the worker runs
// in the job's folder, so what the command writes by default lands among the job's artifacts.
// Its printed lines go to the worker log; events.jsonl gets the job's start and end as status
// events. A stop request (cancel, pause) or SIGTERM ends the process at once with that state:
// a command keeps no state worth a checkpoint, and a resumed one starts again. Returns the
// worker exit code.
#include <string>

#include "core/base/job_folder.h"
#include "core/base/json.h"

namespace crucible {
class EventLogWriter;
}

namespace crucible::engine {

int run_command_job(const Json& spec, const JobFolder& folder, EventLogWriter* events);

}  // namespace crucible::engine
