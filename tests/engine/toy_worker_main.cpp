// A worker that knows the toy task: the kill/resume and distributed tests run it as a child
// process (`engine_toy_worker --job DIR [--resume]`) with CRUCIBLE_FAULT set. As crucible-worker,
// it becomes the launcher of a job that asks for several ranks and starts itself once per rank.
#include <string>
#include <vector>

#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/worker_arguments.h"
#include "core/engine/job.h"
#include "core/engine/stop_control.h"
#include "core/jobs/rank_launcher.h"
#include "tests/engine/toy_task.h"

namespace {

int toy_main(int argc, char** argv) {
    crucible::engine::toy::ensure_registered();
    const auto parsed = crucible::parse_worker_arguments({argv + 1, argv + argc});
    const auto dir = parsed.job;
    crucible::engine::JobOptions options;
    options.console = false;
    options.resume = parsed.resume;
    options.rank = parsed.rank;
    options.launch_ranks = crucible::jobs::rank_launcher(
        crucible::this_executable(), dir, options.resume, crucible::engine::signal_stop_pending);
    return crucible::engine::run_job(dir, options);
}

}  // namespace

int main(int argc, char** argv) {
    return crucible::run_at_boundary("engine_toy_worker", toy_main, argc, argv);
}
