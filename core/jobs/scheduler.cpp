#include "core/jobs/scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>

#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/gpu_ref.h"
#include "core/base/job_control.h"
#include "core/base/worker_arguments.h"
#include "core/jobs/job_events.h"
#include "core/jobs/rank_launcher.h"

namespace crucible::jobs {

std::string tail_lines(const std::filesystem::path& file, int lines) {
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return "";
    std::string text = read_file_bytes_limited(file, 64u << 20);
    std::size_t pos = text.size();
    if (pos && text[pos - 1] == '\n') --pos;
    for (int n = 0; n < lines && pos != std::string::npos && pos > 0; ++n)
        pos = text.rfind('\n', pos - 1);
    return pos == std::string::npos || pos == 0 ? text : text.substr(pos + 1);
}

Scheduler::Scheduler(JobRegistry& registry, SchedulerOptions options)
    : registry_(registry), options_(std::move(options)) {}

Scheduler::~Scheduler() {
    stop(true);
}

void Scheduler::start() {
    running_ = true;
    thread_ = std::thread([this] { loop(); });
}

void Scheduler::stop(bool leave_running) {
    if (!running_.exchange(false)) return;
    wake();
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(mutex_);
    if (!leave_running) {
        for (auto& [id, child] : children_)
            write_stop_request(JobFolder{registry_.folder(id)}, StopRequest::Checkpoint);
        const auto deadline = std::chrono::steady_clock::now() + options_.stop_grace;
        for (auto& [id, child] : children_) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            auto exit = child->wait_for(std::max(left, std::chrono::milliseconds(0)));
            if (!exit) {
                spdlog::warn("job {}: worker did not stop within {} s; killed", id,
                             options_.stop_grace.count() / 1000);
                child->kill();
                exit = child->wait();
            }
            finish_job(id, *exit);
        }
    }
    children_.clear();
}

void Scheduler::hold(const std::string& id, const std::vector<int>& gpus) {
    std::lock_guard lock(mutex_);
    held_[id] = gpus;
    busy_gpus_.insert(gpus.begin(), gpus.end());
}

void Scheduler::release(const std::string& id) {
    {
        std::lock_guard lock(mutex_);
        auto it = held_.find(id);
        if (it == held_.end()) return;
        for (int g : it->second)
            busy_gpus_.erase(g);
        held_.erase(it);
    }
    wake();
}

void Scheduler::wake() {
    {
        std::lock_guard lock(mutex_);
        woken_ = true;
    }
    cv_.notify_all();
}

void Scheduler::loop() {
    std::string last_error;
    while (running_) {
        std::unique_lock lock(mutex_);
        cv_.wait_for(lock, options_.tick, [this] { return woken_ || !running_; });
        woken_ = false;
        if (!running_) break;
        try {
            reap_finished();
            start_ready_jobs();
            last_error.clear();
        } catch (const std::exception& e) {
            // A job.json that cannot be written (disk full, a virus scanner holding it) must
            // not end the agent: the next tick tries again. Logged once per distinct error.
            if (last_error != e.what()) spdlog::error("scheduler: {} (trying again)", e.what());
            last_error = e.what();
        }
    }
}

void Scheduler::reap_finished() {
    for (auto it = children_.begin(); it != children_.end();) {
        if (auto exit = it->second->poll()) {
            finish_job(it->first, *exit);
            it = children_.erase(it);
        } else {
            ++it;
        }
    }
}

namespace {

// The state crucible-worker's exit code stands for (job_state.h), or null (a signal, a crash).
const char* exit_code_meaning(const ExitInfo& exit) {
    if (exit.signal != 0) return nullptr;
    const auto state = state_of_exit_code(exit.code);
    return state ? job_state_name(*state) : nullptr;
}

}  // namespace

void Scheduler::finish_job(const std::string& id, const ExitInfo& exit) {
    auto dir = registry_.folder(id);
    // The worker's own last status event says why it ended; if it wrote none (crash, kill,
    // out of memory in the OS), the agent writes one with the exit code or signal.
    std::string state, reason;
    try {
        for (const auto& e : read_event_log(JobFolder{dir}.events())) {
            if (e.kind != event_kind::kStatus) continue;
            state = e.fields.value("state", std::string());
            reason = e.fields.value("reason", std::string());
        }
    } catch (const std::exception& e) {
        spdlog::warn("job {}: unreadable events: {}", id, e.what());
    }
    // The worker's last status decides: it is written once the state is reached (the checkpoint
    // saved, the weights written). Its exit code is checked against it; without a status the
    // job failed, and the code (one of worker_exit_code's, or a crash) says how far it got.
    JobState final_state = JobState::Failed;
    const auto said = try_parse_job_state(state);
    const bool worker_said = said && *said != JobState::Queued && *said != JobState::Running;
    const char* code_means = exit_code_meaning(exit);
    if (worker_said) {
        final_state = *said;
        if (exit.signal != 0 || exit.code != worker_exit_code(final_state))
            reason += " (then the worker ended with " + exit.describe() + ")";
    } else {
        reason = "the worker ended without a final status: " + exit.describe();
        if (code_means) reason += std::string(", its code for ") + code_means;
        std::string tail = tail_lines(JobFolder{dir}.worker_log(), 20);
        if (!tail.empty()) reason += "\nlast log lines:\n" + tail;
    }
    // The worker is gone: the agent owns events.jsonl now. What the worker left in its inbox
    // (alarms raised near its end) goes in first, then the agent's own final word.
    try {
        EventLogWriter writer(JobFolder{dir}.events());
        drain_job_inbox(dir, writer);
        if (!worker_said) {
            Event ev = make_status(job_state_name(JobState::Failed), reason);
            ev.fields["exit_code"] = exit.code;
            ev.fields["signal"] = exit.signal;
            writer.append(ev);
        }
    } catch (const std::exception& e) {
        spdlog::warn("job {}: cannot append to its events: {}", id, e.what());
    }
    clear_stop_request(JobFolder{dir});
    auto record = registry_.update(id, [&](JobInfo& j) {
        j.state = final_state;
        j.reason = reason;
        j.finished = unix_time_now();
        for (int g : j.gpu_ids)
            busy_gpus_.erase(g);
        j.gpu_ids.clear();
        j.pid = 0;
        // An interrupted job (preemption notice, checkpoint-now) goes back into the queue.
        if (final_state == JobState::Interrupted && running_) {
            j.state = JobState::Queued;
            j.resume = true;
        }
        if (final_state == JobState::Paused) j.resume = true;
    });
    if (record) spdlog::info("job {} ended: {} {}", id, job_state_name(record->state), reason);
}

void Scheduler::start_ready_jobs() {
    auto jobs = registry_.list();
    std::vector<JobInfo> ready;
    for (auto& j : jobs)
        if ((j.state == JobState::Queued || (j.state == JobState::Interrupted && j.resume)) &&
            !held_.count(j.id) && (!gate_ || gate_(j)))
            ready.push_back(j);
    std::stable_sort(ready.begin(), ready.end(), [](const JobInfo& a, const JobInfo& b) {
        if (a.priority != b.priority) return a.priority > b.priority;
        return a.submitted < b.submitted;
    });
    const bool have_gpus = !options_.gpu_ids.empty();
    for (const auto& job : ready) {
        std::vector<int> gpus;
        if (have_gpus) {
            const int want = std::max(job.gpus, 1);
            std::vector<int> free;
            for (int g : options_.gpu_ids) {
                const auto& asked = job.requested_gpus;
                const bool wanted =
                    asked.empty() || std::find(asked.begin(), asked.end(), g) != asked.end();
                // Several ranks need whole GPUs (gpu_ranks.h); a MIG slice takes 1-GPU jobs.
                const bool fits = want == 1 || !options_.mig_gpus.count(g);
                if (wanted && fits && !busy_gpus_.count(g)) free.push_back(g);
            }
            // Several GPUs: the closest free set (NVLink, one PCIe switch) of those allowed.
            gpus = closest_gpus(free, want, options_.topology);
            if (gpus.empty()) break;  // keep priority order: wait for GPUs
        } else if (static_cast<int>(children_.size()) >= options_.max_cpu_jobs) {
            break;
        }
        if (!start_job(job, gpus)) continue;
    }
}

bool Scheduler::start_job(const JobInfo& job, std::vector<int> gpus) {
    auto dir = registry_.folder(job.id);
    std::error_code ec;
    auto space = std::filesystem::space(dir, ec);
    if (!ec && space.available < options_.min_free_disk_bytes) {
        registry_.update(job.id, [&](JobInfo& j) {
            j.state = JobState::Failed;
            j.reason = "not enough free disk for the job folder (" +
                       std::to_string(space.available >> 20) + " MB free, " +
                       std::to_string(options_.min_free_disk_bytes >> 20) + " MB needed)";
            j.finished = unix_time_now();
        });
        return false;
    }
    ChildOptions co;
    co.program = options_.worker_program;
    co.args = options_.worker_args;
    for (auto& a : worker_job_arguments(dir, job.resume))
        co.args.push_back(std::move(a));
    co.log_file = JobFolder{dir}.worker_log();
    co.working_dir = dir;
    std::string visible;
    for (int g : gpus)
        visible += (visible.empty() ? "" : ",") + std::to_string(g);
    co.env["CUDA_VISIBLE_DEVICES"] = visible;  // empty = no GPU for a CPU job
    // The indices above are NVML's; without this CUDA would number the GPUs fastest first.
    co.env[kCudaDeviceOrderVariable] = kCudaDeviceOrderPciBus;
    clear_stop_request(JobFolder{dir});
    try {
        auto child = ChildProcess::start(co);
        long pid = child->pid();
        children_[job.id] = std::move(child);
        for (int g : gpus)
            busy_gpus_.insert(g);
        registry_.update(job.id, [&](JobInfo& j) {
            j.state = JobState::Running;
            j.started = unix_time_now();
            j.gpu_ids = gpus;
            j.pid = pid;
            j.worker_started = process_start_token(pid);
            j.reason.clear();
        });
        return true;
    } catch (const std::exception& e) {
        registry_.update(job.id, [&](JobInfo& j) {
            j.state = JobState::Failed;
            j.reason = e.what();
            j.finished = unix_time_now();
        });
        return false;
    }
}

void Scheduler::raise_job_event(const std::string& id, const Event& event) {
    std::lock_guard lock(mutex_);
    auto dir = registry_.folder(id);
    // Under the lock a job is either still owned by its worker (finish_job, which drains the
    // inbox, has not run yet) or by nobody: exactly one writer appends to events.jsonl.
    if (children_.count(id)) {
        post_to_job_inbox(dir, event);
        return;
    }
    // No worker: the agent writes, unless the job has ended (its final status stays last; an
    // alarm seen just before the end is dropped rather than appended after it).
    auto job = registry_.get(id);
    if (job && !is_final_state(job->state)) append_job_event(dir, event);
}

std::string Scheduler::cancel(const std::string& id) {
    std::lock_guard lock(mutex_);
    auto job = registry_.get(id);
    if (!job) return "no job " + id;
    if (!can_cancel(job->state))
        return "job " + id + " has already ended (" + job_state_name(job->state) + ")";
    if (children_.count(id)) {
        write_stop_request(JobFolder{registry_.folder(id)}, StopRequest::Cancel);
        return "";
    }
    registry_.update(id, [](JobInfo& j) {
        j.state = JobState::Canceled;
        j.reason = "canceled before it ran";
        j.finished = unix_time_now();
    });
    return "";
}

std::string Scheduler::pause(const std::string& id) {
    std::lock_guard lock(mutex_);
    auto job = registry_.get(id);
    if (!job) return "no job " + id;
    if (children_.count(id)) {
        write_stop_request(JobFolder{registry_.folder(id)}, StopRequest::Pause);
        return "";
    }
    if (job->state == JobState::Queued || job->state == JobState::Interrupted) {
        registry_.update(id, [](JobInfo& j) { j.state = JobState::Paused; });
        return "";
    }
    return "job " + id + " is " + job_state_name(job->state) + " and cannot be paused";
}

std::string Scheduler::resume(const std::string& id) {
    {
        std::lock_guard lock(mutex_);
        auto job = registry_.get(id);
        if (!job) return "no job " + id;
        if (!can_resume(job->state))
            return "job " + id + " is " + job_state_name(job->state) +
                   "; only paused or interrupted jobs resume";
        registry_.update(id, [](JobInfo& j) {
            j.state = JobState::Queued;
            j.resume =
                j.started > 0;  // a job paused while queued never ran: nothing to resume from
        });
    }
    wake();
    return "";
}

}  // namespace crucible::jobs
