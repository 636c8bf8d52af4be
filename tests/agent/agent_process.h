// POSIX-only test: includes raw_http.h (BSD sockets) and reads memory from /proc/<pid>/status.
#pragma once
// The real crucible-agent executable on a loopback port, with a token and the fake worker, for
// tests and benchmarks that measure the agent from outside: its memory is its own
// (/proc/<pid>/status), not mixed with the client's.
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "core/base/child_process.h"
#include "core/net/api_client.h"
#include "core/net/token_store.h"
#include "tests/agent/raw_http.h"
#include "tests/support/free_port.h"

namespace crucible::test {

struct AgentProcess {
    std::filesystem::path data;
    std::string token;
    int port = 0;
    std::unique_ptr<ChildProcess> child;

    // Starts `agent_exe` on a free port with the data folder `data_dir` and waits until
    // /v1/health answers (false after 20 s).
    bool start(const std::filesystem::path& agent_exe, const std::filesystem::path& worker,
               const std::filesystem::path& data_dir) {
        data = data_dir;
        std::filesystem::create_directories(data);
        if (token.empty()) token = net::TokenStore(data / "tokens.json").create("tester");
        port = test_support::free_loopback_port();
        ChildOptions o;
        o.program = agent_exe;
        o.args = {"--listen", "127.0.0.1:" + std::to_string(port),
                  "--data",   data.string(),
                  "--worker", worker.string(),
                  "--nvml",   "/nonexistent/libnvidia-ml.so.1"};
        o.log_file = data / "agent-stdout.log";
        child = ChildProcess::start(o);
        net::ApiClient c = client();
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (std::chrono::steady_clock::now() < end) {
            try {
                if (c.get("/v1/health")["status"] == "ok") return true;
            } catch (const std::exception&) {
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return false;
    }

    void stop() {
        if (!child) return;
        child->kill();
        child->wait();
        child.reset();
    }
    ~AgentProcess() { stop(); }

    std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
    net::ApiClient client() const { return net::ApiClient({url(), token, ""}); }
    long rss_kb() const { return child ? test::rss_kb(child->pid()) : 0; }
    std::string bearer() const { return "Authorization: Bearer " + token + "\r\n"; }
};

}  // namespace crucible::test
