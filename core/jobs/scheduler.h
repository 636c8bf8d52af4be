#pragma once
// Starts queued jobs as crucible-worker processes when resources allow (priority first, FIFO
// within a priority; disjoint GPUs through CUDA_VISIBLE_DEVICES; a configurable number of jobs
// at once on a CPU-only host), watches them, and records why each ended. Jobs found
// interrupted (agent restart, preemption) are resumed from their last checkpoint.
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/base/child_process.h"
#include "core/base/event.h"
#include "core/jobs/gpu_topology.h"
#include "core/jobs/job_registry.h"

namespace crucible::jobs {

struct SchedulerOptions {
    std::filesystem::path worker_program;  // crucible-worker
    std::vector<std::string> worker_args;  // extra leading args (tests use a fake worker script)
    int max_cpu_jobs = 1;                  // jobs at once when there is no GPU
    std::vector<int> gpu_ids;              // GPUs this agent may hand out
    std::set<int> mig_gpus;                // of those, split into MIG slices: 1-GPU jobs only
    GpuTopology topology;                  // how close they are: a multi-GPU job's set
    std::uint64_t min_free_disk_bytes = 512ull << 20;
    std::chrono::milliseconds tick{100};
    // How long stop() waits for running workers to checkpoint before killing them (a Windows
    // service reports its stop progress meanwhile; shutdown does not wait for ever).
    std::chrono::milliseconds stop_grace{std::chrono::seconds(60)};
};

class Scheduler {
  public:
    Scheduler(JobRegistry& registry, SchedulerOptions options);
    ~Scheduler();

    void start();
    // Stops scheduling. Running workers are asked to checkpoint and stop (they become
    // interrupted and resume when the agent comes back) unless `leave_running`; one that has not
    // exited within options.stop_grace is killed (it resumes from its last checkpoint).
    void stop(bool leave_running = false);
    void wake();

    // The agent's path into a job's events (alarms): the job's inbox while its worker runs,
    // events.jsonl directly otherwise (see job_events.h). Thread-safe.
    void raise_job_event(const std::string& id, const Event& event);

    // A job whose worker outlived the agent and still runs: it is not started again, and its
    // GPUs are not handed out, until release() (the old worker is gone).
    void hold(const std::string& id, const std::vector<int>& gpus);
    void release(const std::string& id);
    // Asked before a ready job starts; false keeps it queued for now (the checkpoint mirror
    // holds a job until its restore is over). Set before start().
    void set_start_gate(std::function<bool(const JobInfo&)> gate) { gate_ = std::move(gate); }

    // Control; each returns an error message, or "" when accepted.
    std::string cancel(const std::string& id);
    std::string pause(const std::string& id);
    std::string resume(const std::string& id);

  private:
    void loop();
    void reap_finished();
    void start_ready_jobs();
    bool start_job(const JobInfo& job, std::vector<int> gpus);
    void finish_job(const std::string& id, const ExitInfo& exit);

    JobRegistry& registry_;
    SchedulerOptions options_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::atomic<bool> running_{false};
    bool woken_ = false;
    std::thread thread_;
    std::map<std::string, std::unique_ptr<ChildProcess>> children_;
    std::set<int> busy_gpus_;
    std::map<std::string, std::vector<int>> held_;  // job id -> GPUs its orphaned worker uses
    std::function<bool(const JobInfo&)> gate_;
};

// The last lines of a text file (why a job failed).
std::string tail_lines(const std::filesystem::path& file, int lines);

}  // namespace crucible::jobs
