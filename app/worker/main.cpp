// crucible-worker: runs one job folder. `crucible-worker describe` prints every task's option
// schema as JSON, so the agent can serve schemas without linking LibTorch.
//   crucible-worker --job DIR [--resume]   exit 0 succeeded, 1 failed, 3 paused, 4 canceled,
//                                          5 interrupted (checkpointed on SIGTERM / request)
#include <cstdio>
#include <string>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/engine/job.h"
#include "core/engine/task.h"

namespace {

int usage() {
    std::fprintf(stderr, "usage: crucible-worker describe | --version | --job DIR [--resume]\n");
    return 2;
}

int worker_main(int argc, char** argv) {
    std::string first = argc > 1 ? argv[1] : "";
    if (first == "--version") {
        std::printf("crucible-worker %s\n", CRUCIBLE_VERSION);
        return 0;
    }
    if (first == "describe") {
        std::printf("%s\n", crucible::engine::describe_tasks().dump(2).c_str());
        return 0;
    }
    std::string job;
    crucible::engine::JobOptions options;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--job" && i + 1 < argc)
            job = argv[++i];
        else if (arg == "--resume")
            options.resume = true;
        else
            return usage();
    }
    if (job.empty()) return usage();
    return crucible::engine::run_job(crucible::path_from_utf8(job), options);
}

}  // namespace

int main(int argc, char** argv) {
    return crucible::run_at_boundary("crucible-worker", worker_main, argc, argv);
}
