// POSIX-only test: forks a child to run a job that may crash.
#include "tests/engine/test_util.h"

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>

#ifndef _WIN32
#include <sys/wait.h>
#include <unistd.h>
#endif

#include "core/base/file_io.h"
#include "core/base/sha256.h"
#include "core/engine/job.h"
#include "tests/engine/toy_task.h"
#include "tests/support/results_csv.h"
#include "tests/support/temp_dir.h"

namespace crucible::engine::testing {

std::filesystem::path fresh_dir(const std::string& name) {
    return test_support::scratch_dir(std::string("engine_") + name);
}

void write_toy_spec(const std::filesystem::path& dir, const Json& options) {
    std::filesystem::create_directories(dir);
    write_json_file(dir / "spec.json", Json{{"task", toy::kTaskId}, {"options", options}});
}

int run_in_process(const std::filesystem::path& dir, bool resume) {
    toy::ensure_registered();
    JobOptions o;
    o.resume = resume;
    o.console = false;
    o.install_signals = false;
    return run_job(dir, o);
}

std::vector<Event> events_of(const std::filesystem::path& dir) {
    return read_event_log(dir / "events.jsonl");
}

std::vector<std::vector<std::string>> csv_of(const std::filesystem::path& dir, bool drop_time) {
    auto rows = test_support::read_csv_cells(dir / "results.csv");
    if (!drop_time || rows.empty()) return rows;
    int time_col = -1;
    for (std::size_t i = 0; i < rows.front().size(); ++i)
        if (rows.front()[i] == "time") time_col = static_cast<int>(i);
    if (time_col < 0) return rows;
    for (auto& cells : rows)
        if (time_col < static_cast<int>(cells.size())) cells.erase(cells.begin() + time_col);
    return rows;
}

std::string weights_sha(const std::filesystem::path& dir, const std::string& name) {
    return sha256_file(dir / "artifacts" / "weights" / (name + ".safetensors"));
}

ChildResult run_child(const std::filesystem::path& dir, bool resume, const std::string& fault) {
    ChildResult r;
#ifdef _WIN32
    (void)dir;
    (void)resume;
    (void)fault;
#else
    const pid_t pid = ::fork();
    if (pid == 0) {
        if (fault.empty())
            ::unsetenv("CRUCIBLE_FAULT");
        else
            ::setenv("CRUCIBLE_FAULT", fault.c_str(), 1);
        const std::string job = dir.string();
        if (resume)
            ::execl(ENGINE_TOY_WORKER, ENGINE_TOY_WORKER, "--job", job.c_str(), "--resume",
                    static_cast<char*>(nullptr));
        else
            ::execl(ENGINE_TOY_WORKER, ENGINE_TOY_WORKER, "--job", job.c_str(),
                    static_cast<char*>(nullptr));
        std::_Exit(127);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) {
        r.killed = WTERMSIG(status) == SIGKILL;
    } else if (WIFEXITED(status)) {
        r.exit_code = WEXITSTATUS(status);
        r.killed = r.exit_code == 137;
    }
#endif
    return r;
}

}  // namespace crucible::engine::testing
