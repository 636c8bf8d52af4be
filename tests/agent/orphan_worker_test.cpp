// POSIX-only test: checks which file descriptors a worker inherits, a POSIX notion (Windows: handle
// lists, covered by the wine tests). An agent that starts beside a worker that outlived it serves
// at once, never starts a second worker on that job folder while the old one lives, kills it after
// the grace period and then resumes the job; workers inherit only stdin, stdout and stderr.
#include <gtest/gtest.h>

#include <fstream>

#include "core/base/child_process.h"
#include "core/base/file_io.h"
#include "tests/agent/agent_test_util.h"

#ifndef _WIN32
#include <fcntl.h>
#include <unistd.h>
#endif

using namespace crucible;
using namespace crucible::test;

#ifndef _WIN32
TEST(OrphanWorker, AgentServesAtOnceAndNeverDoublesTheWorker) {
    auto data = fresh_dir("orphan");
    jobs::JobRegistry registry(data / "jobs");
    jobs::JobInfo rec;
    rec.task = "test.fake";
    rec.options = {{"steps", 3}, {"delay_ms", 1}};
    rec.submitted_by = "tester";
    const std::string id = registry.add(rec).id;
    // A "worker" that ignores the checkpoint request: it never reads control.json.
    ChildOptions o;
    o.program = "/bin/sh";
    o.args = {"-c", "trap '' TERM; sleep 60"};
    auto orphan = ChildProcess::start(o);
    registry.update(id, [&](jobs::JobInfo& j) {
        j.state = JobState::Running;
        j.pid = orphan->pid();
        j.worker_started = process_start_token(orphan->pid());
    });

    auto config = fake_agent_config(data);
    config.orphan_grace = std::chrono::seconds(2);
    jobs::AgentService agent(config);
    const std::string token = agent.tokens().create("tester");
    const auto t0 = std::chrono::steady_clock::now();
    const int port = agent.start();
    net::ApiClient c({"http://127.0.0.1:" + std::to_string(port), token, ""});
    EXPECT_EQ(c.get("/v1/health")["status"], "ok");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1))
        << "the API waited for the orphaned worker";

    // While the old worker lives the job is not started again.
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    EXPECT_TRUE(process_alive(orphan->pid()));
    EXPECT_EQ(c.get("/v1/jobs/" + id)["state"], "interrupted");

    // After the grace period it is killed, and the job resumes with a worker of its own.
    ASSERT_TRUE(wait_until([&] { return c.get("/v1/jobs/" + id)["state"] == "succeeded"; },
                           std::chrono::seconds(20)));
    EXPECT_FALSE(process_alive(orphan->pid()));
    EXPECT_NE(orphan->wait().signal, 0) << "the orphan should have been killed";
    agent.stop();
    std::filesystem::remove_all(data);
}

TEST(OrphanWorker, ChildrenInheritOnlyTheStandardStreams) {
    auto dir = fresh_dir("fds");
    // A descriptor without close-on-exec, as a client socket or a log file of the agent's.
    const int fd = ::open("/dev/null", O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::dup2(fd, 50), 50);
    ChildOptions o;
    o.program = "/bin/sh";
    o.args = {"-c", "if [ -e /proc/self/fd/50 ]; then echo leaked; else echo closed; fi > " +
                        path_to_utf8(dir / "out.txt")};
    ChildProcess::start(o)->wait();
    ::close(50);
    ::close(fd);
    std::ifstream in(dir / "out.txt");
    std::string word;
    in >> word;
    EXPECT_EQ(word, "closed");
    std::filesystem::remove_all(dir);
}
#endif
