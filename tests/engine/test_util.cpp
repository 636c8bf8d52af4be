#include "tests/engine/test_util.h"

#include <fstream>
#include <sstream>

#include "core/base/child_process.h"
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
    ChildOptions o;
    o.program = ENGINE_TOY_WORKER;
    o.args = {"--job", path_to_utf8(dir)};
    if (resume) o.args.push_back("--resume");
    // An empty value counts as unset (fault.cpp reads nonempty_environment_variable), so a fault
    // set in the test's own environment never reaches the child by accident.
    o.env["CRUCIBLE_FAULT"] = fault;
    const ExitInfo e = ChildProcess::start(o)->wait();
    // The fault kills with SIGKILL on POSIX (signal 9; <csignal> on Windows has no SIGKILL) and
    // with exit code 137 where there are no signals.
    constexpr int kSigkill = 9;
    ChildResult r;
    if (e.signal != 0) {
        r.killed = e.signal == kSigkill;
    } else {
        r.exit_code = e.code;
        r.killed = e.code == 137;
    }
    return r;
}

}  // namespace crucible::engine::testing
