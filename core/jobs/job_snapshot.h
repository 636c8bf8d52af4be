#pragma once
// What a job's worker last reported, read from the end of its events.jsonl: the agent's view of
// a run without following its whole log (the /metrics endpoint, alarm notes). Only the tail is
// read (kTailBytes), so a value reported long before it is absent rather than slow to find.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/json.h"

namespace crucible::jobs {

// Hands `visit` the parsable events among the last `max_bytes` of `events_file`, newest first,
// until it returns false (a torn or damaged line is passed over; a missing file has none). Lines
// are parsed only as they are visited: a reader that wants the newest metric parses one or two.
void visit_recent_events(const std::filesystem::path& events_file, std::size_t max_bytes,
                         const std::function<bool(const Json& event)>& visit);

struct JobSnapshot {
    static constexpr std::size_t kTailBytes = 256u << 10;

    // The latest progress event.
    std::optional<std::int64_t> step, total_steps;
    std::optional<int> epoch, epochs;
    std::optional<double> items_per_s, eta_s;
    // The number values of the latest metric event (train/box_loss, lr/pg0, ...) and of the
    // latest eval event (metrics/mAP50(B), val/box_loss, ...).
    std::map<std::string, double> train;
    std::map<std::string, double> eval;
};

JobSnapshot latest_job_snapshot(const std::filesystem::path& job_dir);

}  // namespace crucible::jobs
