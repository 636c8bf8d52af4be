// The real crucible-agent executable: killed with SIGKILL in the middle of a job and started
// again, the job resumes from its checkpoint and a client following the whole time receives
// every event exactly once.
#include <csignal>
#include <set>

#include "core/base/child_process.h"
#include "core/net/token_store.h"
#include "tests/agent/agent_test_util.h"
#include "tests/support/free_port.h"

using namespace crucible;
using namespace crucible::test;

namespace {

using test_support::free_loopback_port;

std::unique_ptr<ChildProcess> start_agent(const std::filesystem::path& data, int port) {
    ChildOptions o;
    o.program = CRUCIBLE_AGENT_EXE;
    o.args = {"--listen", "127.0.0.1:" + std::to_string(port),
              "--data",   data.string(),
              "--worker", CRUCIBLE_FAKE_WORKER,
              "--nvml",   "/nonexistent/libnvidia-ml.so.1"};
    o.log_file = data / "agent-stdout.log";
    return ChildProcess::start(o);
}

}  // namespace

TEST(AgentProcess, KilledAgentResumesJobAndClientSeesEachEventOnce) {
    auto data = fresh_dir("kill9");
    std::string token = net::TokenStore(data / "tokens.json").create("tester");
    int port = free_loopback_port();
    auto agent = start_agent(data, port);
    std::string url = "http://127.0.0.1:" + std::to_string(port);
    net::ApiClient c({url, token, ""});
    ASSERT_TRUE(wait_until([&] {
        try {
            return c.get("/v1/health")["status"] == "ok";
        } catch (...) {
            return false;
        }
    }));
#ifndef _WIN32
    // The data folder is the owner's alone, and so is every file the agent makes in it.
    namespace fs = std::filesystem;
    EXPECT_EQ(fs::status(data).permissions() & fs::perms::all, fs::perms::owner_all);
    ASSERT_TRUE(fs::exists(data / "agent.log"));
    EXPECT_EQ(fs::status(data / "agent.log").permissions() &
                  (fs::perms::group_all | fs::perms::others_all),
              fs::perms::none);
#endif
    // Submit straight into the job folder layout the agent owns, then restart the agent so it
    // picks the job up.
    jobs::JobRegistry registry(data / "jobs");
    jobs::JobInfo rec;
    rec.task = "test.fake";
    rec.options = {{"steps", 60}, {"delay_ms", 40}};
    rec.submitted_by = "tester";  // a user sees only the jobs they submitted
    std::string id = registry.add(rec).id;
    agent->kill();
    agent->wait();
    agent = start_agent(data, port);

    std::vector<std::int64_t> seqs;
    std::set<std::int64_t> unique;
    std::string final_state;
    std::atomic<bool> killed{false};
    std::thread follower([&] {
        c.follow_events(
            id, -1,
            [&](const Event& e) {
                seqs.push_back(e.seq);
                unique.insert(e.seq);
                if (e.kind == "status") final_state = e.fields.value("state", "");
                return true;
            },
            nullptr, std::chrono::milliseconds(200));
    });
    // Kill the agent (not the worker) once the job is well under way, then start it again.
    ASSERT_TRUE(wait_until([&] {
        auto ev = read_event_log(data / "jobs" / id / "events.jsonl");
        return ev.size() > 15;
    }));
    agent->kill();
    agent->wait();
    killed = true;
    agent = start_agent(data, port);
    follower.join();
    agent->kill();
    agent->wait();

    EXPECT_EQ(final_state, "succeeded");
    EXPECT_EQ(seqs.size(), unique.size()) << "an event was delivered twice";
    for (std::size_t i = 0; i < seqs.size(); ++i)
        ASSERT_EQ(seqs[i], static_cast<std::int64_t>(i)) << "gap or reorder";
    auto all = read_event_log(data / "jobs" / id / "events.jsonl");
    EXPECT_EQ(seqs.size(), all.size());
    // The resumed worker wrote a rollback; after dropping superseded points every step 1..60
    // appears exactly once.
    std::map<std::int64_t, int> steps;
    for (const auto& e : drop_superseded(all))
        if (e.kind == "metric") ++steps[e.step()];
    EXPECT_EQ(steps.size(), 60u);
    for (auto& [s, n] : steps)
        EXPECT_EQ(n, 1) << "step " << s;
    std::filesystem::remove_all(data);
}
