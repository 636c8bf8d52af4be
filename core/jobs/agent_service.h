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
#include "core/jobs/blob_store.h"
#include "core/jobs/gpu_inventory.h"
#include "core/jobs/job_registry.h"
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
    std::size_t threads = 96;
    RetentionPolicy retention;
    AlarmThresholds alarms;                            // agent.json "alarms"
    std::chrono::milliseconds telemetry_period{1000};  // GPU telemetry and alarm checks
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
    // Maps a path option ("dataset:<id>", "blob:<sha256>/<name>" or a server path) to a path on
    // this machine; throws InputError naming the option when it is outside the allowed roots.
    std::string resolve_server_path(const std::string& option, const std::string& value) const;
    std::string blob_input_path(const std::string& option, const std::string& ref) const;
    void audit(const std::string& who, const std::string& action, const std::string& detail);
    Json resolve_job_options(const std::string& task, const Json& options) const;
    // One telemetry tick: publishes the GPUs and raises alarms for the running jobs.
    void watch_gpus(AlarmMonitor& monitor);

    AgentConfig config_;
    std::shared_ptr<net::TokenStore> tokens_;
    JobRegistry registry_;
    Scheduler scheduler_;
    BlobStore blobs_;
    StateFeed feed_;
    std::unique_ptr<GpuInventory> gpus_;
    std::unique_ptr<net::HttpServer> server_;
    std::string fingerprint_;
    std::mutex audit_mutex_;
    std::atomic<bool> telemetry_running_{false};
    mutable std::atomic<double> last_active_{0};  // the last time seconds_idle saw a job active
    std::thread telemetry_;
};

}  // namespace crucible::jobs
