#include "core/engine/command_job.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "core/base/error.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/job_control.h"
#include "core/base/job_state.h"
#include "core/base/log.h"
#include "core/base/options_schema.h"
#include "core/engine/stop_control.h"
#include "core/engine/task.h"
#include "core/engine/task_commands.h"

namespace crucible::engine {

namespace {

// The job's one end: the command's own, or a stop request's, whichever comes first.
class JobEnd {
  public:
    explicit JobEnd(EventLogWriter* events) : events_(events) {}

    // Records `state` unless the job has ended already; returns whether it did.
    bool record(JobState state, const std::string& reason) {
        std::lock_guard lock(mutex_);
        if (ended_) return false;
        if (is_final_state(state) || state == JobState::Paused) ended_ = true;
        if (events_) events_->append(make_status(job_state_name(state), reason));
        return true;
    }

  private:
    std::mutex mutex_;
    EventLogWriter* events_;
    bool ended_ = false;
};

// Watches for a stop request while the command runs; one that comes ends the process with its
// state (there is no safe point inside a command to stop at).
class StopWatcher {
  public:
    StopWatcher(const JobFolder& folder, JobEnd& end)
        : thread_([this, dir = folder.dir, &end] { watch(dir, end); }) {}
    ~StopWatcher() {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }

  private:
    void watch(const std::filesystem::path& dir, JobEnd& end) {
        StopControl control(dir);
        std::unique_lock lock(mutex_);
        while (!wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return done_; })) {
            const StopRequest request = control.poll();
            if (request == StopRequest::None) continue;
            const JobState state = request == StopRequest::Cancel  ? JobState::Canceled
                                   : request == StopRequest::Pause ? JobState::Paused
                                                                   : JobState::Interrupted;
            const std::string reason = std::string("stopped (") + stop_request_name(request) +
                                       "); a command starts again from the beginning";
            if (!end.record(state, reason)) return;
            log_info(reason);
            std::fflush(nullptr);
            std::_Exit(worker_exit_code(state));
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    bool done_ = false;
    std::thread thread_;
};

}  // namespace

int run_command_job(const Json& spec, const JobFolder& folder, EventLogWriter* events) {
    const std::string where = path_to_utf8(folder.spec());
    JobEnd end(events);
    try {
        const std::string task = TaskRegistry::instance().get(get_string(spec, "task", where)).id;
        const std::string name = get_string(spec, "command", where);
        const TaskCommand* command = TaskCommands::instance().find(task, name);
        if (!command || command->output_option.empty())
            throw InputError("command",
                             "task " + task + " has no command '" + name + "' that runs as a job");
        const Json given = spec.contains("options") ? spec["options"] : Json::object();
        if (!given.is_object()) throw InputError(where, "field 'options' must be an object");
        const Json options = command->options().resolve(given);
        end.record(JobState::Running, task + " " + name);
        log_info("running `" + name + "` of " + task);
        int code = 0;
        {
            StopWatcher watcher(folder, end);
            code = command->run(options);
        }
        std::fflush(stdout);
        if (code != 0) {
            const std::string reason = name + " ended with exit code " + std::to_string(code);
            log_error(reason);
            end.record(JobState::Failed, reason);
            return worker_exit_code(JobState::Failed);
        }
        end.record(JobState::Succeeded, name + " done");
        log_info(name + " done");
        return worker_exit_code(JobState::Succeeded);
    } catch (const std::exception& e) {
        std::fflush(stdout);
        log_error(e.what());
        end.record(JobState::Failed, e.what());
        return worker_exit_code(JobState::Failed);
    }
}

}  // namespace crucible::engine
