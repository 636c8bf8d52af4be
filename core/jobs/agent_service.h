#pragma once
// crucible-agent's service: the /v1 HTTP API (see resources/api/openapi.yaml) over the job
// registry, scheduler, blob store, datasets and GPU inventory. No LibTorch: task schemas come
// from `crucible-worker describe`.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/base/json.h"
#include "core/jobs/alarms.h"
#include "core/jobs/audit_log.h"
#include "core/jobs/blob_store.h"
#include "core/jobs/checkpoint_mirror.h"
#include "core/jobs/cluster_config.h"
#include "core/jobs/cluster_runs.h"
#include "core/jobs/dataset_store.h"
#include "core/jobs/gpu_inventory.h"
#include "core/jobs/job_registry.h"
#include "core/jobs/path_policy.h"
#include "core/jobs/retention.h"
#include "core/jobs/scheduler.h"
#include "core/jobs/state_feed.h"
#include "core/net/http_server.h"

namespace crucible::jobs {

struct AgentConfig {
    std::filesystem::path data_dir;
    std::string host = "127.0.0.1";
    int port = 7443;
    bool insecure = false;  // plain HTTP on a non-loopback address
    std::filesystem::path cert_file,
        key_file;  // empty: self-signed in <data>/tls when TLS is needed
    std::vector<std::filesystem::path> roots;  // server folders clients may reference and browse
    SchedulerOptions scheduler;
    Json task_schemas = Json::array();   // from `crucible-worker describe`
    std::filesystem::path nvml_library;  // override (tests use a fake NVML)
    std::size_t threads = 16;            // handler pool; idle connections and streams hold none
    RetentionPolicy retention;
    AlarmThresholds alarms;                            // agent.json "alarms"
    std::chrono::milliseconds telemetry_period{1000};  // GPU telemetry and alarm checks
    // Bytes of uploads each non-admin token may keep (agent.json "quota_gb_per_user"; 0 = no
    // quota). Uploads also leave scheduler.min_free_disk_bytes free on the data folder's disk.
    std::uint64_t quota_bytes_per_user = 0;
    // How long a worker that outlived the agent gets to checkpoint and stop when the agent
    // starts again; then it is killed. Either way its job resumes once it is gone.
    std::chrono::seconds orphan_grace{120};
    MirrorConfig mirror;    // agent.json "mirror": where runs with a run id keep their checkpoints
    ClusterConfig cluster;  // agent.json "cluster": the peers a run may span (cluster_config.h)
};

// Reads <data>/agent.json (roots, max_cpu_jobs, alarm thresholds) into `config` when present.
void load_agent_config_file(AgentConfig& config);
// Runs `<worker> describe` and returns its "tasks" array (empty with a warning on failure).
Json describe_tasks(const std::filesystem::path& worker_program);

class AgentService {
  public:
    explicit AgentService(AgentConfig config);
    ~AgentService();

    // Starts the scheduler and the HTTP server; returns the bound port.
    int start();
    void stop(bool leave_workers_running = false);

    bool tls() const;
    std::string fingerprint() const;  // SHA-256 of the TLS certificate ("" without TLS)
    net::TokenStore& tokens() { return *tokens_; }
    JobRegistry& registry() { return registry_; }
    // Seconds since the agent last had work: a job queued or running, or a request
    // with a valid token (a client that follows or browses counts). 0 while a job is active.
    double seconds_idle() const;

  private:
    void add_info_routes();
    void add_job_routes();
    void add_data_routes();
    void add_metrics_routes();  // agent_routes_metrics.cpp
    // Maps a path option ("dataset:<id>", "blob:<sha256>/<name>" or a server path) to a path on
    // this machine under the path policy; throws InputError naming the option when the caller
    // may not use it.
    std::string resolve_server_path(const std::string& option, const std::string& value,
                                    const net::Caller& caller) const;
    std::string blob_input_path(const std::string& option, const std::string& ref,
                                const net::Caller& caller) const;
    void audit(const std::string& who, const std::string& action, const std::string& detail);
    // The options checked against the task's schema (or, for `command`, that command's) with
    // their paths resolved on this machine.
    Json resolve_job_options(const std::string& task, const std::string& command,
                             const Json& options, const net::Caller& caller) const;
    // One telemetry tick: publishes the GPUs and raises alarms for the running jobs.
    void watch_gpus(AlarmMonitor& monitor);
    // Waits (on its own thread, while the API serves) for the workers that outlived the agent
    // to stop, kills those still running after orphan_grace, and lets their jobs resume.
    void settle_orphans(std::vector<JobInfo> orphans);

    AgentConfig config_;
    std::shared_ptr<net::TokenStore> tokens_;
    PathPolicy paths_;
    JobRegistry registry_;
    Scheduler scheduler_;
    BlobStore blobs_;
    DatasetStore datasets_;
    StateFeed feed_;
    std::unique_ptr<GpuInventory> gpus_;
    std::unique_ptr<net::HttpServer> server_;
    std::string fingerprint_;
    AuditLog audit_log_;
    std::atomic<bool> telemetry_running_{false};
    mutable std::atomic<double> last_active_{0};  // the last time seconds_idle saw a job active
    std::thread telemetry_;
    std::thread orphans_;
    std::unique_ptr<CheckpointMirror> mirror_;
    std::unique_ptr<ClusterRuns> cluster_;
};

}  // namespace crucible::jobs
