#pragma once
// The agent's own events for a job (GPU alarms, "interrupted", the failure of a worker that died
// without a word) take one path into the job's events.jsonl, so that the log keeps exactly one
// writer at a time and its seq stays gap-free and never reused (DESIGN.md "Events"): while a
// worker runs, the agent posts to the job's inbox (core/base/event_inbox.h) and the worker
// appends; when no worker runs, the agent appends itself, after whatever the inbox still holds.
#include <cstddef>
#include <filesystem>
#include <string>

#include "core/base/event.h"
#include "core/base/event_inbox.h"

namespace crucible::jobs {

// The agent's writer path for a job with no worker running: drains the inbox, then appends
// `event`. Returns the stored event (with its seq).
Event append_job_event(const std::filesystem::path& job_dir, const Event& event);

// What the job's worker last said of its GPU memory, from the end of its events.jsonl:
// " (the job's allocator: allocated 20.1 GiB, reserved 22.4 GiB)", or "" when it said nothing.
// NVML sees the reserved bytes plus the CUDA context; the allocated ones are what tensors use.
std::string allocator_note(const std::filesystem::path& job_dir);

}  // namespace crucible::jobs
