#pragma once
// The bodies of the agent's API as types, each with its one JSON mapping: the agent writes them
// with to_json() and the client reads them with from_json(), so the two sides cannot drift.
// from_json() treats the JSON as outside input: a field of the wrong type, a negative size or a
// list that is not a list is an InputError naming the field ("gpus[1].memory_used"); a missing
// optional field takes its default. resources/api/openapi.yaml documents the same shapes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/base/event.h"
#include "core/base/job_state.h"
#include "core/base/json.h"
#include "core/base/rank_plan.h"

namespace crucible::net {

// ---- GET /v1/gpus (and "gpus" of GET /v1/info) ----------------------------------------------

struct MigInstance {
    int index = 0;
    std::string name;
    std::uint64_t memory_total = 0;
};

struct GpuInfo {
    int index = 0;
    std::string name;
    std::string uuid;
    std::uint64_t memory_total = 0, memory_used = 0;
    int utilization = 0;  // percent
    int temperature = 0;  // °C
    double power_w = 0;
    std::vector<unsigned> process_ids;
    bool mig_enabled = false;
    std::vector<MigInstance> mig;
    // Windows only: "WDDM" (display driver: shares the GPU with the desktop, slower launches),
    // "TCC" (compute only) or "MCDM"; "" elsewhere or when NVML cannot tell.
    std::string driver_model;

    std::uint64_t memory_free() const {
        return memory_total > memory_used ? memory_total - memory_used : 0;
    }
};

struct GpuReport {
    bool nvml = false;            // NVML found and initialised
    std::string note;             // why there are no GPUs, in words
    std::string driver_version;   // "550.54.15"
    int cuda_driver_version = 0;  // 12040 = 12.4
    std::vector<GpuInfo> gpus;

    Json to_json() const;
    static GpuReport from_json(const Json& json);
};

// ---- GET /v1/info -----------------------------------------------------------------------------

struct AgentInfo {
    std::string version;  // crucible-agent's version
    int protocol = 0, min_protocol = 0;
    bool tls = false;
    Json tasks = Json::array();  // every task's option schema (OptionSchema::to_json)
    GpuReport gpus;
    int max_cpu_jobs = 0;
    // The names of the agent's peers (agent.json "cluster") a run may also train on (the submit's
    // `servers`); only names, never their addresses or tokens. Empty: none, or an older agent.
    std::vector<std::string> peers;

    Json to_json() const;
    static AgentInfo from_json(const Json& json);
};

// ---- POST /v1/jobs and the jobs it returns -------------------------------------------------

// Ranks of the job on another agent (a run over several servers): one of the agent's peers
// (agent.json "cluster"), with its GPUs as for the job itself; none named: as many as the job
// takes here (its gpus, or its CPU ranks).
struct ServerRanks {
    std::string server;  // the peer's name in the agent's agent.json
    std::optional<int> gpus;
    std::vector<int> gpu;
};

struct SubmitRequest {
    std::string task;  // "detect.yolo" or an alias
    // "" trains; otherwise one of the task's commands an agent runs as a job ("predict"), the
    // options being that command's (the task's "commands" in /v1/info).
    std::string command;
    Json options = Json::object();
    std::string name;  // user label, at most 200 characters
    int priority = 0;  // higher first
    // GPUs asked for (at most 1 for now); unset: the agent's default, as 0 (the CPU, or any
    // one GPU when the scheduler has one free).
    std::optional<int> gpus;
    // Particular GPUs by the agent's index: "gpu": 1 or "gpu": [0, 2] (implies gpus = their
    // count); the job waits until all of them are free.
    std::vector<int> gpu;
    // The run's name in the agent's checkpoint mirror (core/jobs/checkpoint_mirror.h): the same
    // id submitted on another machine goes on from the run's newest mirrored checkpoint.
    std::string run_id;
    // A run over several servers: the other agents that run ranks of this job. The agent that
    // receives it serves the rendezvous store and starts the others' shares.
    std::vector<ServerRanks> servers;
    // Sent by that agent to each of the others: this server's share (never from a person).
    std::optional<ServerShare> share;
    std::string part_of;  // with `share`: "<agent>/<job id>" of the job serving the store

    Json to_json() const;
    // Validates a submit body: InputError naming the field.
    static SubmitRequest from_json(const Json& body);
};

// A job as the agent keeps it (its job.json) and shows it.
struct JobInfo {
    std::string id;
    std::string name;     // user label
    std::string task;     // "detect.yolo"
    std::string command;  // "" for training, else the task's command the job runs ("predict")
    Json options = Json::object();
    int priority = 0;  // higher first; FIFO within a priority
    int gpus = 0;      // GPUs asked for (0 = CPU or any one GPU when present, see scheduler)
    JobState state = JobState::Queued;
    std::string reason;  // why it ended / was interrupted
    double submitted = 0, started = 0, finished = 0;
    std::vector<int> gpu_ids;         // assigned while running
    std::vector<int> requested_gpus;  // the GPUs (agent indices) asked for; none: any free ones
    long pid = 0;
    // When that worker process started (process_start_token): a pid reused by another
    // process after a reboot is not mistaken for the job's worker.
    std::string worker_started;
    bool resume = false;  // next start continues from the last checkpoint
    std::string submitted_by;
    std::string run_id;  // mirrored under this name ("" = not mirrored)
    // A run over several servers, on the agent serving its store: the other agents' jobs that
    // run the rest of its ranks ("job" empty until the agent there accepted it).
    struct Part {
        std::string server, job;
        bool settled = false;  // the part has ended, or was told to (nothing left to watch)
    };
    std::vector<Part> parts;
    std::string part_of;  // on the other agents: "<agent>/<job id>" of the job serving the store

    // A new, queued job for a request (no id yet).
    static JobInfo from_request(const SubmitRequest& request);
    Json to_json() const;
    static JobInfo from_json(const Json& json, const std::string& where);
};

// GET /v1/jobs
std::vector<JobInfo> jobs_from_json(const Json& json);

// GET /v1/jobs/{id}/events?format=json: {"events": [...]}, each as event_to_json writes it.
Json events_to_json(const std::vector<Event>& events);
std::vector<Event> events_from_json(const Json& json);

// POST /v1/jobs/{id}/cancel|pause|resume
enum class JobAction { Cancel, Pause, Resume };
const char* job_action_name(JobAction action);  // "cancel", "pause", "resume"
std::optional<JobAction> parse_job_action(const std::string& name);

// ---- GET /v1/jobs/{id}/artifacts ---------------------------------------------------------

struct ArtifactEntry {
    std::string path;  // relative to the job folder, '/' separators
    std::uint64_t size = 0;
};
Json artifacts_to_json(const std::vector<ArtifactEntry>& artifacts);
std::vector<ArtifactEntry> artifacts_from_json(const Json& json);

// ---- GET /v1/fs ---------------------------------------------------------------------------

struct FolderEntry {
    std::string name;
    bool dir = false;
    std::uint64_t size = 0;
};
// Without a path: the shared roots; with one: that folder's entries.
struct FolderListing {
    std::vector<std::string> roots;
    std::string path;
    std::vector<FolderEntry> entries;

    Json to_json() const;
    static FolderListing from_json(const Json& json);
};

// ---- GET /v1/datasets and POST /v1/datasets ---------------------------------------------

struct DatasetSummary {
    std::string id;
    std::string name;
    std::uint64_t files = 0;

    Json to_json() const;
    static DatasetSummary from_json(const Json& json, const std::string& where);
};
// GET /v1/datasets: {"datasets": [...]}
Json datasets_to_json(const std::vector<DatasetSummary>& datasets);
std::vector<DatasetSummary> datasets_from_json(const Json& json);

}  // namespace crucible::net
