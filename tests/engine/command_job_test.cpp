// A job that runs a task's command instead of training (core/engine/command_job.h), through the
// toy worker as the agent starts it (in the job's folder): the command's output lands there, the
// events say how it went, and a stop request ends a command in flight with that state.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/base/child_process.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/job_control.h"
#include "core/base/job_folder.h"
#include "core/base/job_state.h"
#include "tests/support/temp_dir.h"

namespace crucible::engine {
namespace {

namespace fs = std::filesystem;

struct CommandJob {
    JobFolder folder;
    std::unique_ptr<ChildProcess> worker;

    CommandJob(const std::string& name, const Json& spec)
        : folder{test_support::scratch_dir(name) / "job"} {
        folder.create();
        write_json_file(folder.spec(), spec);
        ChildOptions o;
        o.program = ENGINE_TOY_WORKER;
        o.args = {"--job", path_to_utf8(folder.dir)};
        o.working_dir = folder.dir;  // as the agent's scheduler starts it
        o.log_file = folder.dir / "stdout.log";
        worker = ChildProcess::start(o);
    }
    // The status events' states, in order.
    std::vector<std::string> states() const {
        std::vector<std::string> out;
        for (const auto& e : read_event_log(folder.events()))
            if (e.kind == "status") out.push_back(e.fields.value("state", std::string()));
        return out;
    }
};

TEST(CommandJob, RunsInTheJobFolderAndSaysItSucceeded) {
    CommandJob job("command_job_ok",
                   {{"task", "toy"}, {"command", "wait"}, {"options", Json::object()}});
    EXPECT_EQ(job.worker->wait().code, worker_exit_code(JobState::Succeeded));
    EXPECT_TRUE(fs::exists(job.folder.dir / "started"));
    EXPECT_TRUE(fs::exists(job.folder.dir / "done"));
    EXPECT_EQ(job.states(), (std::vector<std::string>{"running", "succeeded"}));
}

TEST(CommandJob, ACancelRequestEndsTheCommandInFlight) {
    CommandJob job("command_job_cancel",
                   {{"task", "toy"}, {"command", "wait"}, {"options", {{"seconds", 60}}}});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!fs::exists(job.folder.dir / "started") && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(fs::exists(job.folder.dir / "started"))
        << read_file_bytes(job.folder.dir / "stdout.log");
    const auto asked = std::chrono::steady_clock::now();
    write_stop_request(job.folder, StopRequest::Cancel);
    EXPECT_EQ(job.worker->wait().code, worker_exit_code(JobState::Canceled));
    EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(10))
        << "the 60 s command was not cut short";
    EXPECT_FALSE(fs::exists(job.folder.dir / "done"));
    EXPECT_EQ(job.states(), (std::vector<std::string>{"running", "canceled"}));
}

TEST(CommandJob, ACommandTheTaskLacksFailsNamingIt) {
    CommandJob job("command_job_unknown",
                   {{"task", "toy"}, {"command", "nope"}, {"options", Json::object()}});
    EXPECT_EQ(job.worker->wait().code, worker_exit_code(JobState::Failed));
    const auto events = read_event_log(job.folder.events());
    ASSERT_FALSE(events.empty());
    EXPECT_NE(events.back().fields.value("reason", std::string()).find("no command 'nope'"),
              std::string::npos);
    // Bad options are refused by the command's schema, naming the option.
    CommandJob bad("command_job_bad",
                   {{"task", "toy"}, {"command", "wait"}, {"options", {{"seconds", "soon"}}}});
    EXPECT_EQ(bad.worker->wait().code, worker_exit_code(JobState::Failed));
    EXPECT_NE(read_event_log(bad.folder.events())
                  .back()
                  .fields.value("reason", std::string())
                  .find("seconds"),
              std::string::npos);
}

}  // namespace
}  // namespace crucible::engine
