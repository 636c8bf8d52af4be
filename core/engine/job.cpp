#include "core/engine/job.h"

#include "core/base/allocator.h"
#include "core/base/error.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/log.h"
#include "core/engine/run_folder.h"
#include "core/engine/stop_control.h"
#include "core/engine/task.h"
#include "core/engine/trainer.h"

namespace crucible::engine {

ResolvedSpec resolve_spec(const Json& spec, const std::string& where) {
    if (!spec.is_object())
        throw InputError(where, "spec must be a JSON object with 'task' and 'options'");
    ResolvedSpec r;
    r.task = TaskRegistry::instance().get(get_string(spec, "task", where)).id;
    r.options = spec.contains("options") ? spec["options"] : Json::object();
    if (!r.options.is_object()) throw InputError(where, "field 'options' must be an object");
    const auto task = TaskRegistry::instance().get(r.task).make();
    r.config = task->schema().resolve(r.options);
    return r;
}

int run_job(const std::filesystem::path& job_dir, const JobOptions& options) {
    JobFolder paths{job_dir};
    if (!std::filesystem::is_directory(job_dir))
        throw InputError(path_to_utf8(job_dir), "job folder does not exist");
    paths.create();
    keep_freed_memory_for_reuse();  // activations, batches and checkpoints reuse freed memory
    LogOptions log;
    log.file = paths.worker_log();
    log.console = options.console;
    init_logging(log);
    EventLogWriter events(paths.events());
    if (options.install_signals) install_stop_signal_handlers();
    ResolvedSpec spec;
    try {
        spec = resolve_spec(read_json_file(paths.spec()), path_to_utf8(paths.spec()));
    } catch (const std::exception& e) {
        log_error(e.what());
        events.append(make_status(job_state_name(JobState::Failed), e.what()));
        return worker_exit_code(JobState::Failed);
    }
    const TaskInfo& info = TaskRegistry::instance().get(spec.task);
    std::unique_ptr<Task> task = info.make();
    Trainer trainer(*task, info, spec.config, paths, events);
    const TrainOutcome outcome = trainer.run(options.resume);
    log_info("job " + path_to_utf8(job_dir) + ": " + job_state_name(outcome.state) + " (" +
             outcome.reason + ")");
    return outcome.exit_code;
}

}  // namespace crucible::engine
