#pragma once
// The agent's own events for a job (GPU alarms, "interrupted", the failure of a worker that died
// without a word) take one path into the job's events.jsonl, so that the log keeps exactly one
// writer at a time and its seq stays gap-free and never reused (DESIGN.md "Events"):
//  - while a worker runs, the worker owns events.jsonl; the agent drops the event as one file
//    into <job>/inbox/ (written atomically, named so that names sort in posting order) and the
//    worker appends it with its own writer between steps;
//  - when no worker runs, the agent appends it itself, after whatever the inbox still holds.
// Inbox files are single JSON objects: an event without seq (t is the time it was raised).
#include <cstddef>
#include <filesystem>

#include "core/base/event.h"
#include "core/base/event_inbox.h"

namespace crucible::jobs {

// The inbox itself lives in core/base (the worker drains it too).
using crucible::drain_job_inbox;
using crucible::job_inbox;
using crucible::post_to_job_inbox;

// The agent's writer path for a job with no worker running: drains the inbox, then appends
// `event`. Returns the stored event (with its seq).
Event append_job_event(const std::filesystem::path& job_dir, const Event& event);

}  // namespace crucible::jobs
