#include "core/jobs/job_registry.h"

#include <spdlog/spdlog.h>

#include "core/base/error.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/job_folder.h"

namespace crucible::jobs {

JobRegistry::JobRegistry(std::filesystem::path jobs_dir) : jobs_dir_(std::move(jobs_dir)) {
    std::filesystem::create_directories(jobs_dir_);
}

std::vector<JobInfo> JobRegistry::load() {
    std::vector<JobInfo> interrupted;
    std::lock_guard lock(mutex_);
    for (const auto& entry : std::filesystem::directory_iterator(jobs_dir_)) {
        auto file = JobFolder{entry.path()}.record();
        std::error_code ec;
        if (!entry.is_directory() || !std::filesystem::exists(file, ec)) continue;
        try {
            JobInfo r = JobInfo::from_json(read_json_file(file), path_to_utf8(file));
            if (r.state == JobState::Running) {
                interrupted.push_back(r);
                r.state = JobState::Interrupted;
                r.reason = "the agent stopped while the job ran";
                r.resume = true;
                r.gpu_ids.clear();
                r.pid = 0;
                persist(r);
            }
            jobs_[r.id] = r;
        } catch (const std::exception& e) {
            spdlog::warn("skipping job folder {}: {}", path_to_utf8(entry.path()), e.what());
        }
    }
    return interrupted;
}

void JobRegistry::persist(const JobInfo& job) const {
    write_json_file(JobFolder{jobs_dir_ / job.id}.record(), job.to_json());
}

JobInfo JobRegistry::add(JobInfo job, const std::optional<ServerShare>& share) {
    job.id = new_job_id();
    job.submitted = unix_time_now();
    job.state = JobState::Queued;
    const JobFolder folder{jobs_dir_ / job.id};
    folder.create();
    Json spec = {{"task", job.task}, {"options", job.options}, {"name", job.name}};
    if (!job.command.empty()) spec["command"] = job.command;  // command_job.h
    if (share) spec[kSpecServerShare] = share->to_json();
    write_json_file(folder.spec(), spec);
    std::vector<std::function<void(const JobInfo&)>> listeners;
    {
        std::lock_guard lock(mutex_);
        persist(job);
        jobs_[job.id] = job;
        listeners = listeners_;
    }
    for (auto& l : listeners)
        l(job);
    return job;
}

std::optional<JobInfo> JobRegistry::get(const std::string& id) const {
    std::lock_guard lock(mutex_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return std::nullopt;
    return it->second;
}

std::vector<JobInfo> JobRegistry::list() const {
    std::lock_guard lock(mutex_);
    std::vector<JobInfo> out;
    for (const auto& [_, j] : jobs_)
        out.push_back(j);
    return out;
}

std::optional<JobInfo> JobRegistry::update(const std::string& id,
                                           const std::function<void(JobInfo&)>& change) {
    JobInfo copy;
    std::vector<std::function<void(const JobInfo&)>> listeners;
    {
        std::lock_guard lock(mutex_);
        auto it = jobs_.find(id);
        if (it == jobs_.end()) return std::nullopt;
        change(it->second);
        persist(it->second);
        copy = it->second;
        listeners = listeners_;
    }
    for (auto& l : listeners)
        l(copy);
    return copy;
}

bool JobRegistry::remove(const std::string& id) {
    std::lock_guard lock(mutex_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return false;
    std::error_code ec;
    std::filesystem::remove_all(jobs_dir_ / id, ec);
    jobs_.erase(it);
    return true;
}

void JobRegistry::on_change(std::function<void(const JobInfo&)> listener) {
    std::lock_guard lock(mutex_);
    listeners_.push_back(std::move(listener));
}

}  // namespace crucible::jobs
