// crucible-worker: runs one job folder. `crucible-worker describe [--out FILE]` prints (or
// writes) every task's option schema as JSON, so the agent can serve schemas without linking
// LibTorch; `devices [--out FILE]` what LibTorch and CUDA see (core/jobs/worker_query.h).
//   crucible-worker --job DIR [--resume]   exit 0 succeeded, 1 failed, 3 paused, 4 canceled,
//                                          5 interrupted (checkpointed on SIGTERM / request)
// A job asking for several ranks (device=0,1 or device=cpu ranks=2) makes this process their
// launcher: it starts itself once per rank with the rank arguments (core/base/rank_plan.h).
#include <cstdio>
#include <string>
#include <vector>

#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/worker_arguments.h"
#include "core/engine/job.h"
#include "core/engine/stop_control.h"
#include "core/engine/task.h"
#include "core/jobs/rank_launcher.h"

namespace {

int usage() {
    std::fprintf(
        stderr,
        "usage: crucible-worker describe|devices [--out FILE] | --version | --job DIR [--resume] "
        "[--rank R --world-size N --store HOST:PORT --rank-device D]\n");
    return 2;
}

int worker_main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    const std::string first = args.empty() ? "" : args[0];
    if (first == "--version") {
        std::printf("crucible-worker %s\n", CRUCIBLE_VERSION);
        return 0;
    }
    if (first == "describe" || first == "devices") {
        const crucible::Json answer = first == "describe" ? crucible::engine::describe_tasks()
                                                          : crucible::engine::describe_devices();
        const std::string text = answer.dump(2) + "\n";
        if (args.size() == 3 && args[1] == "--out")  // the agent's way: a file, not stdout
            crucible::write_file_atomically(crucible::path_from_utf8(args[2]), text);
        else
            std::fputs(text.c_str(), stdout);
        return 0;
    }
    crucible::WorkerArguments parsed;
    try {
        parsed = crucible::parse_worker_arguments(args);
    } catch (const crucible::InputError& e) {
        std::fprintf(stderr, "crucible-worker: %s\n", e.what());
        return usage();
    }
    const auto dir = parsed.job;
    crucible::engine::JobOptions options;
    options.resume = parsed.resume;
    options.rank = parsed.rank;
    options.console = options.rank.rank == 0;  // other ranks write their own logs
    options.launch_ranks = crucible::jobs::rank_launcher(
        crucible::this_executable(), dir, options.resume, crucible::engine::signal_stop_pending);
    return crucible::engine::run_job(dir, options);
}

}  // namespace

int main(int argc, char** argv) {
    return crucible::run_at_boundary("crucible-worker", worker_main, argc, argv);
}
