#pragma once
// A job's state (DESIGN.md "Jobs and reliability") with its one string form, and the worker's exit
// code for each state it ends in. The worker writes the state into its status events and leaves
// with the matching code; the agent keeps it in job.json and reads the exit code when the worker
// died without a final status; the CLI and the studio parse the same strings.
//
//   queued -> running -> succeeded | failed | canceled       (final)
//                     -> paused | interrupted -> queued ...  (resumable)
#include <optional>
#include <string>
#include <string_view>

namespace crucible {

enum class JobState { Queued, Running, Paused, Succeeded, Failed, Canceled, Interrupted };

const char* job_state_name(JobState state);
std::optional<JobState> try_parse_job_state(std::string_view text);
JobState parse_job_state(const std::string& text);  // InputError("state", ...) on unknown text
bool is_final_state(JobState state);                // succeeded, failed, canceled

// What may be asked of a job in `state` (the agent's scheduler and the studio's buttons follow
// these): cancel until it has ended; pause while queued, running or interrupted; resume when
// paused or interrupted.
bool can_cancel(JobState state);
bool can_pause(JobState state);
bool can_resume(JobState state);

// The worker's exit codes: succeeded 0, failed 1, paused 3, canceled 4, interrupted 5 (2 is
// the usage error of a command line). Queued and Running are no way to end: failed's code.
int worker_exit_code(JobState state);
// The state an exit code stands for; nullopt for any other code (a crash).
std::optional<JobState> state_of_exit_code(int code);

}  // namespace crucible
