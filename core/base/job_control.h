#pragma once
// Stop requests to a running worker, the same on Windows and Linux (a worker of a Windows service
// has no console, so no console signals): a request file in the job folder (JobFolder::control,
// {"request": "pause" | "cancel" | "checkpoint", "t": unix seconds}) that the trainer polls
// between steps and removes once taken. The agent, the CLI and tests write it; the trainer reads
// it. This file is its only writer and reader.
#include <optional>
#include <string>

#include "core/base/job_folder.h"

namespace crucible {

// Pause: checkpoint, exit, state paused. Cancel: clean exit, state canceled. Checkpoint:
// checkpoint within a bounded time, exit, state interrupted (also what SIGTERM means).
enum class StopRequest { None, Pause, Cancel, Checkpoint };

const char* stop_request_name(StopRequest request);
// "pause", "cancel", "checkpoint"; nullopt for anything else.
std::optional<StopRequest> parse_stop_request(const std::string& name);

// Writes the request file atomically (a request already waiting is replaced).
void write_stop_request(const JobFolder& job, StopRequest request);
// Removes a waiting request (a worker about to start must not see an old one).
void clear_stop_request(const JobFolder& job);
// The waiting request, removed once read: None when there is none (one stat) or while it is
// still being written; Checkpoint for a file that cannot be understood (it still stops safely).
StopRequest take_stop_request(const JobFolder& job);
// The waiting request, left in place (a launcher watching whether its ranks take it).
StopRequest peek_stop_request(const JobFolder& job);

}  // namespace crucible
