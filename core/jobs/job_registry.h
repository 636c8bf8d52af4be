#pragma once
// The agent's jobs: one folder each under <data>/jobs/<id>/ holding job.json (the agent's record,
// written atomically on every change), spec.json (what the worker reads), events.jsonl,
// checkpoints/, artifacts/ and worker.log. The registry is rebuilt from the folders at start, so
// nothing lives only in memory.
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "core/jobs/job.h"

namespace crucible::jobs {

class JobRegistry {
  public:
    explicit JobRegistry(std::filesystem::path jobs_dir);

    // Loads every job folder; jobs found `running` were interrupted by an agent crash: they
    // become interrupted (to be resumed). Returns those records as they were (with the pid of
    // a worker that may have outlived the agent).
    std::vector<JobInfo> load();

    // Assigns id + folder, writes spec.json (with this server's share of a run over several
    // servers, when it is one) and job.json.
    JobInfo add(JobInfo job, const std::optional<ServerShare>& share = std::nullopt);
    std::optional<JobInfo> get(const std::string& id) const;
    std::vector<JobInfo> list() const;
    // Applies `change` under the lock and persists the result; returns the updated record.
    std::optional<JobInfo> update(const std::string& id,
                                  const std::function<void(JobInfo&)>& change);
    bool remove(const std::string& id);  // deletes the folder (final states only)

    std::filesystem::path folder(const std::string& id) const { return jobs_dir_ / id; }
    const std::filesystem::path& jobs_dir() const { return jobs_dir_; }

    // Called after every change (state feed for the server-wide SSE stream).
    void on_change(std::function<void(const JobInfo&)> listener);

  private:
    void persist(const JobInfo& job) const;

    std::filesystem::path jobs_dir_;
    mutable std::mutex mutex_;
    std::map<std::string, JobInfo> jobs_;
    std::vector<std::function<void(const JobInfo&)>> listeners_;
};

}  // namespace crucible::jobs
