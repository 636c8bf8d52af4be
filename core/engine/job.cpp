#include "core/engine/job.h"

#include <optional>

#include "core/base/allocator.h"
#include "core/base/error.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/log.h"
#include "core/engine/command_job.h"
#include "core/engine/fault.h"
#include "core/engine/run_folder.h"
#include "core/engine/stop_control.h"
#include "core/engine/task.h"
#include "core/engine/train_options.h"
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
    check_rank_address(options.rank);
    const bool main_rank = options.rank.rank == 0;
    paths.create();
    keep_freed_memory_for_reuse();  // activations, batches and checkpoints reuse freed memory
    set_fault_rank(options.rank.rank);
    LogOptions log;
    log.file = main_rank ? paths.worker_log() : paths.rank_log(options.rank.rank);
    log.console = options.console;
    init_logging(log);
    std::optional<EventLogWriter> events;  // rank 0 alone opens (and writes) events.jsonl
    if (main_rank) events.emplace(paths.events());
    if (options.install_signals) install_stop_signal_handlers();
    ResolvedSpec spec;
    RankPlan plan;
    try {
        const Json spec_json = read_json_file(paths.spec());
        if (spec_json.is_object() && spec_json.contains("command"))
            return run_command_job(spec_json, paths, events ? &*events : nullptr);
        spec = resolve_spec(spec_json, path_to_utf8(paths.spec()));
        const TrainOptions train = TrainOptions::from_config(spec.config);
        plan = plan_ranks(train.device, train.ranks);
        if (spec_json.contains(kSpecServerShare)) {
            plan.share = ServerShare::from_json(
                spec_json[kSpecServerShare], path_to_utf8(paths.spec()) + ": " + kSpecServerShare);
            if (plan.first_rank() + plan.local_ranks() > plan.world_size())
                throw InputError(path_to_utf8(paths.spec()),
                                 "this server's " + std::to_string(plan.local_ranks()) +
                                     " rank(s) from rank " + std::to_string(plan.first_rank()) +
                                     " do not fit a world of " + std::to_string(plan.world_size()));
        }
        if (plan.distributed() && options.rank.world_size == 1 && !options.launch_ranks)
            throw InputError("ranks",
                             "this program runs one rank; start the job with "
                             "crucible-worker or crucible train for " +
                                 std::to_string(plan.world_size()) + " ranks");
    } catch (const std::exception& e) {
        log_error(e.what());
        if (events) events->append(make_status(job_state_name(JobState::Failed), e.what()));
        return worker_exit_code(JobState::Failed);
    }
    if (plan.distributed() && options.rank.world_size == 1) {
        std::string devices;
        for (const auto& d : plan.devices)
            devices += (devices.empty() ? "" : ", ") + (d.empty() ? std::string("auto") : d);
        std::string where;
        if (plan.share)
            where = ", ranks " + std::to_string(plan.first_rank()) + ".." +
                    std::to_string(plan.first_rank() + plan.local_ranks() - 1) + " of " +
                    std::to_string(plan.world_size()) + " on this server";
        log_info("starting " + std::to_string(plan.local_ranks()) + " ranks (" + devices + where +
                 ")");
        return options.launch_ranks(plan);
    }
    const TaskInfo& info = TaskRegistry::instance().get(spec.task);
    std::unique_ptr<Task> task = info.make();
    RankAddress rank = options.rank;
    rank.reads_job_folder = rank.rank == plan.first_rank();  // an agent's stop requests reach it
    Trainer trainer(*task, info, spec.config, paths, events ? &*events : nullptr, rank);
    const TrainOutcome outcome = trainer.run(options.resume);
    log_info("job " + path_to_utf8(job_dir) + ": " + job_state_name(outcome.state) + " (" +
             outcome.reason + ")");
    return outcome.exit_code;
}

}  // namespace crucible::engine
