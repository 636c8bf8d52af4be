#pragma once
// The one contract between worker, agent, CLI and GUI (DESIGN.md "Events"): append-only JSON
// lines in a job's events.jsonl. Every event has a gap-free `seq` (never reused) and a time `t`.
// An event is kept as its kind plus the JSON object of its other fields, so every process reads
// and writes the same form without knowing every kind.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "core/base/json.h"

namespace crucible {

namespace event_kind {
inline constexpr const char* kMetric = "metric";
inline constexpr const char* kProgress = "progress";
inline constexpr const char* kEval = "eval";
inline constexpr const char* kStatus = "status";
inline constexpr const char* kLog = "log";
inline constexpr const char* kCheckpoint = "checkpoint";
inline constexpr const char* kArtifact = "artifact";
inline constexpr const char* kSample = "sample";
inline constexpr const char* kAlarm = "alarm";
inline constexpr const char* kRollback = "rollback";
}  // namespace event_kind

// Metric values the agent reads back from a worker's events (metric event "values").
namespace metric_key {
// The CUDA caching allocator's allocated / reserved memory, GiB (GPU runs only).
inline constexpr const char* kGpuMemAllocatedGib = "gpu/mem_allocated_gib";
inline constexpr const char* kGpuMemReservedGib = "gpu/mem_reserved_gib";
}  // namespace metric_key

// True for the kinds DESIGN.md lists.
bool is_known_event_kind(const std::string& kind);

struct Event {
    std::int64_t seq = -1;  // assigned by EventLogWriter::append
    double t = 0;           // seconds since the Unix epoch; assigned on append when 0
    std::string kind;
    Json fields = Json::object();  // everything but seq, t, kind

    // Step of the point for rollback filtering; -1 when the event has none.
    std::int64_t step() const;
};

Json event_to_json(const Event& event);
// Validates seq (non-negative integer), kind (known string), t (number when present).
// Throws InputError naming `where` and the field at fault.
Event event_from_json(const Json& json, const std::string& where = "event");
std::string event_to_line(const Event& event);  // compact JSON, no newline

// Builders for the common kinds. `epoch` counts from 1, as results.csv and the log do: the epoch
// under way (metric, progress) or just finished (eval).
Event make_metric(int epoch, std::int64_t step, const Json& values);
Event make_progress(std::int64_t step, std::int64_t total_steps, int epoch, int epochs,
                    double items_per_s, double eta_s);
Event make_eval(int epoch, std::int64_t step, const Json& values, const Json& per_class = nullptr);
Event make_status(const std::string& state, const std::string& reason = "");
Event make_log(const std::string& level, const std::string& message);
Event make_checkpoint(const std::string& name, std::int64_t step);
Event make_artifact(const std::string& name, const std::string& type);
// A generation for a fixed prompt: {"prompt", "text"} (LLM) or {"prompt", "image"} (an artifact
// name, SD); more fields may follow.
Event make_sample(const Json& fields);
Event make_alarm(const std::string& alarm, const std::string& message);
Event make_rollback(std::int64_t to_step);

// Drops every point superseded by a later rollback: an event with a step above N written
// before {"kind":"rollback","to_step":N}. Rollback events themselves are kept.
std::vector<Event> drop_superseded(const std::vector<Event>& events);

double unix_time_now();

// Appends events to events.jsonl with gap-free seq numbers. On open it reads the existing file,
// continues after its last seq and cuts off a torn last line left by a crash. Thread-safe.
class EventLogWriter {
  public:
    explicit EventLogWriter(std::filesystem::path path);
    // Assigns seq (and t when 0), writes one line, flushes. Returns the stored event.
    Event append(Event event);
    std::int64_t next_seq() const;
    const std::filesystem::path& path() const { return path_; }

  private:
    std::filesystem::path path_;
    mutable std::mutex mutex_;
    std::ofstream out_;
    std::int64_t next_seq_ = 0;
};

// Reads events with seq > after_seq. A torn or unparsable final line is ignored (a writer that
// crashed mid-line); a bad line elsewhere is an InputError naming "file:line".
std::vector<Event> read_event_log(const std::filesystem::path& path, std::int64_t after_seq = -1);

}  // namespace crucible
