#include "core/jobs/worker_query.h"

#include <atomic>

#include "core/base/child_process.h"
#include "core/base/error.h"
#include "core/base/file_io.h"

namespace crucible::jobs {

Json query_worker(const std::filesystem::path& worker, const std::string& command,
                  std::chrono::seconds limit) {
    static std::atomic<int> calls{0};
    const auto out_file = std::filesystem::temp_directory_path() /
                          ("crucible-" + command + "-" + std::to_string(platform::process_id()) +
                           "-" + std::to_string(calls++) + ".json");
    struct Cleanup {
        std::filesystem::path file;
        ~Cleanup() {
            std::error_code ec;
            std::filesystem::remove(file, ec);
        }
    } cleanup{out_file};
    const std::string who = path_to_utf8(worker) + " " + command;
    ChildOptions child;
    child.program = worker;
    child.args = {command, "--out", path_to_utf8(out_file)};
    auto process = ChildProcess::start(child);
    auto exit = process->wait_for(limit);
    if (!exit) {
        process->kill();
        process->wait();
        throw Error(who + ": no answer within " + std::to_string(limit.count()) + " s");
    }
    if (exit->code != 0 || exit->signal != 0) throw Error(who + ": ended with " + exit->describe());
    try {
        return Json::parse(read_file_bytes_limited(out_file, 64u << 20));
    } catch (const std::exception& e) {
        throw Error(who + ": " + e.what());
    }
}

}  // namespace crucible::jobs
