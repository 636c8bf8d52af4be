// A worker that knows the toy task: the kill/resume and distributed tests run it as a child
// process (`engine_toy_worker --job DIR [--resume]`) with CRUCIBLE_FAULT set. As crucible-worker,
// it becomes the launcher of a job that asks for several ranks and starts itself once per rank.
#include <string>
#include <vector>

#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/engine/job.h"
#include "core/engine/stop_control.h"
#include "core/jobs/rank_launcher.h"
#include "tests/engine/toy_task.h"

namespace {

int toy_main(int argc, char** argv) {
    crucible::engine::toy::ensure_registered();
    const std::vector<std::string> args(argv + 1, argv + argc);
    std::string job;
    crucible::engine::JobOptions options;
    options.console = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--job" && i + 1 < args.size())
            job = args[++i];
        else if (args[i] == "--resume")
            options.resume = true;
        else if (!crucible::take_rank_argument(args, i, options.rank))
            return 2;
    }
    if (job.empty()) return 2;
    const auto dir = crucible::path_from_utf8(job);
    options.launch_ranks = crucible::jobs::rank_launcher(
        crucible::this_executable(), dir, options.resume, crucible::engine::signal_stop_pending);
    return crucible::engine::run_job(dir, options);
}

}  // namespace

int main(int argc, char** argv) {
    return crucible::run_at_boundary("engine_toy_worker", toy_main, argc, argv);
}
