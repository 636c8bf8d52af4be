#pragma once
// A job's inbox: how a process that does not own a job's events.jsonl (the agent, while a
// worker runs) gets events into it without a second writer (DESIGN.md "Events": one writer,
// gap-free seq). The poster drops each event as one file into <job>/inbox/ (written atomically,
// named so that names sort in posting order); the owner of events.jsonl appends them with its
// own writer — the worker between steps, the agent when no worker runs.
// Inbox files are single JSON objects: an event without seq (t is the time it was raised).
#include <cstddef>
#include <filesystem>

#include "core/base/event.h"

namespace crucible {

// <job>/inbox
std::filesystem::path job_inbox(const std::filesystem::path& job_dir);

// Posts `event` to the job's inbox.
void post_to_job_inbox(const std::filesystem::path& job_dir, const Event& event);

// Appends every event waiting in the inbox (in posting order) with `writer` and removes each
// file once appended. An unreadable file is set aside as *.bad with a warning. Returns the count
// appended.
std::size_t drain_job_inbox(const std::filesystem::path& job_dir, EventLogWriter& writer);

}  // namespace crucible
