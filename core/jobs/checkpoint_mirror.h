#pragma once
// The checkpoint mirror: checkpoints that outlive the machine (issue [B2 4/8] item 7). A job
// submitted with a run id (SubmitRequest::run_id) has its durable checkpoints, its artifacts and
// its results copied to S3-compatible object storage by the agent, on a thread of its own, after
// each checkpoint the worker completes; the same run id submitted on a fresh machine first
// brings back the newest intact checkpoint (and the artifacts) and then starts the worker with
// --resume, so a spot instance that is reclaimed loses only the steps since that checkpoint.
//
// The agent mirrors, not the worker: the agent has the credentials (its secret store, never the
// job's environment), sees every job folder, and does not link LibTorch; a worker killed with its
// machine cannot finish an upload anyway. A checkpoint is complete once its step file exists
// (CheckpointStore writes it to a temp name, syncs and renames it), so the mirror watches the
// checkpoints/ folder for new step files.
//
// In the bucket, a run's objects mirror its job folder under <prefix>/<run id>/:
//   <prefix>/<run id>/checkpoints/step-<step>.ckpt   the newest `keep` (older ones are deleted)
//   <prefix>/<run id>/artifacts/...                    weights and the task's outputs
//   <prefix>/<run id>/results.csv                      once the job has ended
// Every object carries x-amz-meta-sha256, the SHA-256 of the whole file, which a restore checks.
// What has been uploaded, and the parts of an unfinished multipart upload, are kept in the job
// folder (kMirrorStateFile), so an agent restart resumes an upload where it stopped.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "core/base/event.h"
#include "core/base/json.h"
#include "core/jobs/agent_secrets.h"
#include "core/jobs/job_registry.h"
#include "core/net/s3_client.h"

namespace crucible::jobs {

// agent.json "mirror" (written by `crucible agent mirror set`); credentials are not here.
struct MirrorConfig {
    std::string endpoint;  // "https://s3.eu-central-1.amazonaws.com", "http://10.0.0.5:9000"
    std::string bucket;
    std::string region = "us-east-1";
    std::string prefix;              // objects go under <prefix>/<run id>/ ("" = bucket root)
    std::optional<bool> path_style;  // unset: chosen from the endpoint (see S3Location)
    double max_mbps = 0;             // upload cap in megabits per second; 0 = none
    int keep = 2;                    // checkpoints kept in the bucket for each run
    std::uint64_t part_size = 8ull << 20;
    std::string ca_file;                   // PEM bundle for an endpoint with a private CA
    std::chrono::milliseconds poll{1000};  // how often job folders are looked at

    bool configured() const { return !endpoint.empty() && !bucket.empty(); }
    Json to_json() const;
    // InputError naming `where` and the field at fault.
    static MirrorConfig from_json(const Json& json, const std::string& where);
};

// Run ids name a run in the bucket: 1 to 64 letters, digits, '-' and '_'.
bool is_valid_run_id(const std::string& id);
// "<prefix>/<run id>/" (no leading slash; just "<run id>/" without a prefix).
std::string mirror_run_prefix(const MirrorConfig& config, const std::string& run_id);

class CheckpointMirror {
  public:
    // Credentials come from the agent's secret store; without them the mirror stays off.
    CheckpointMirror(MirrorConfig config, const std::filesystem::path& data_dir,
                     JobRegistry& registry);
    ~CheckpointMirror();
    CheckpointMirror(const CheckpointMirror&) = delete;
    CheckpointMirror& operator=(const CheckpointMirror&) = delete;

    // A bucket and credentials are set: jobs may carry run ids.
    bool enabled() const { return client_ != nullptr; }
    // Why a submit's run id cannot be taken: InputError when this agent has no mirror; a
    // message (409) when one of its jobs that has not ended already runs under that id.
    std::string check_submit(const std::string& run_id) const;

    // The scheduler's gate: a job with a run id starts once its restore has been tried to the
    // end (a checkpoint brought back, or none in the bucket).
    bool may_start(const JobInfo& job);

    // `raise_event` delivers the mirror's messages to a job's events (Scheduler::raise_job_event).
    void start(std::function<void()> wake_scheduler,
               std::function<void(const std::string&, const Event&)> raise_event);
    void stop();
    void wake();

  private:
    struct JobState;
    void loop();
    void restore(const JobInfo& job);
    void sync(const JobInfo& job);
    // Uploads one file of the job folder unless the bucket has it already; Stopped when the
    // agent stops before the end (the progress is kept for the next start).
    enum class Sent { Nothing, File, Stopped };
    Sent upload(const JobInfo& job, JobState& state, const std::filesystem::path& relative);
    void prune(const JobInfo& job, JobState& state);
    JobState load(const JobInfo& job) const;
    void save(const JobInfo& job, const JobState& state) const;
    void note(const JobInfo& job, const std::string& level, const std::string& message);
    bool interrupted() const;

    MirrorConfig config_;
    JobRegistry& registry_;
    std::unique_ptr<net::S3Client> client_;
    std::function<void()> wake_scheduler_;
    std::function<void(const std::string&, const Event&)> raise_event_;

    mutable std::mutex mutex_;
    std::condition_variable cv_;
    bool running_ = false;
    bool woken_ = false;
    std::set<std::string> restored_;  // jobs whose restore is over (cache of their state file)
    std::set<std::string> waiting_;   // jobs the scheduler has asked about
    std::set<std::string> finished_;  // ended jobs with everything mirrored
    std::map<std::string, std::chrono::steady_clock::time_point> retry_at_;
    std::thread thread_;
};

}  // namespace crucible::jobs
