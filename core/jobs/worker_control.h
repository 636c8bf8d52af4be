#pragma once
// How the agent asks a running worker to stop, the same on Windows and Linux (a worker of a
// Windows service has no console, so no console signals): a request file in the job folder
// that the worker polls between steps.
#include <filesystem>
#include <string>

namespace crucible::jobs {

// request: "pause" (checkpoint, exit, state paused), "cancel" (clean exit, state canceled),
// "checkpoint" (checkpoint within a bounded time, exit, state interrupted).
void write_worker_request(const std::filesystem::path& job_dir, const std::string& request);
void clear_worker_request(const std::filesystem::path& job_dir);

}  // namespace crucible::jobs
