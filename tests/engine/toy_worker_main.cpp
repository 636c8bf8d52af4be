// A worker that knows the toy task: the kill/resume tests run it as a child process
// (`engine_toy_worker --job DIR [--resume]`) with CRUCIBLE_FAULT set.
#include <string>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/engine/job.h"
#include "tests/engine/toy_task.h"

namespace {

int toy_main(int argc, char** argv) {
    crucible::engine::toy::ensure_registered();
    std::string job;
    crucible::engine::JobOptions options;
    options.console = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--job" && i + 1 < argc) job = argv[++i];
        if (arg == "--resume") options.resume = true;
    }
    if (job.empty()) return 2;
    return crucible::engine::run_job(crucible::path_from_utf8(job), options);
}

}  // namespace

int main(int argc, char** argv) {
    return crucible::run_at_boundary("engine_toy_worker", toy_main, argc, argv);
}
