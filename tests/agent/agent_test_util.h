#pragma once
// Shared helpers of the agent tests: temp folders, an in-process agent with the fake worker.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>

#include "core/jobs/agent_service.h"
#include "core/net/api_client.h"
#include "core/net/tls.h"
#include "tests/support/scoped_environment.h"
#include "tests/support/temp_dir.h"

namespace crucible::test {

// A new folder for one test's agent (tests/support/temp_dir.h; gone when the process ends).
inline std::filesystem::path fresh_dir(const std::string& name) {
    return test_support::scratch_dir("agent_" + name);
}

// The schema the fake task publishes (what `crucible-worker describe` would print).
inline Json fake_task_schemas() {
    return Json::array(
        {{{"task", "test.fake"},
          {"title", "fake"},
          {"options",
           Json::array({{{"name", "steps"}, {"type", "integer"}, {"default", 20}, {"min", 1}},
                        {{"name", "delay_ms"}, {"type", "integer"}, {"default", 30}, {"min", 0}},
                        {{"name", "data"}, {"type", "path"}, {"default", ""}},
                        {{"name", "model"}, {"type", "path"}, {"default", ""}},
                        {{"name", "device"}, {"type", "string"}, {"default", ""}}})}}});
}

inline jobs::AgentConfig fake_agent_config(const std::filesystem::path& data) {
    jobs::AgentConfig c;
    c.data_dir = data;
    c.port = 0;
    c.scheduler.worker_program = CRUCIBLE_FAKE_WORKER;
    c.scheduler.max_cpu_jobs = 2;
    c.scheduler.min_free_disk_bytes = 1 << 20;
    c.task_schemas = fake_task_schemas();
    c.nvml_library = "/nonexistent/libnvidia-ml.so.1";
    c.threads = 16;
    return c;
}

// The same agent serving TLS with a self-signed certificate made in `data`.
inline jobs::AgentConfig fake_tls_agent_config(const std::filesystem::path& data) {
    jobs::AgentConfig c = fake_agent_config(data);
    auto paths =
        net::ensure_self_signed_certificate(net::self_signed_certificate_paths(data), "127.0.0.1");
    c.cert_file = paths.cert;
    c.key_file = paths.key;
    return c;
}

template <typename Pred>
bool wait_until(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return pred();
}

#ifdef CRUCIBLE_FAKE_NVML  // the targets built beside the fake NVML
// An agent on the fake NVML (tests/agent/fake_nvml.cpp) with a client holding a token; the
// FAKE_NVML_* variables given shape its GPUs for the test's scope (NVML is read when the agent
// is made, so they are set first).
struct FakeGpuAgent {
    explicit FakeGpuAgent(const std::string& name,
                          std::vector<std::pair<std::string, std::string>> nvml = {})
        : environment(std::move(nvml)),
          data(fresh_dir(name)),
          agent(config_for(data)),
          client(connect(agent)) {}
    ~FakeGpuAgent() {
        agent.stop();
        std::filesystem::remove_all(data);
    }
    // What the fake worker of job `id` wrote of its GPU environment.
    std::filesystem::path gpu_env(const std::string& id) const {
        return data / "jobs" / id / "gpu_env";
    }

    test_support::ScopedEnvironment environment;
    std::filesystem::path data;
    jobs::AgentService agent;
    net::ApiClient client;

  private:
    static jobs::AgentConfig config_for(const std::filesystem::path& data) {
        auto config = fake_agent_config(data);
        config.nvml_library = CRUCIBLE_FAKE_NVML;
        return config;
    }
    static net::ApiClient connect(jobs::AgentService& agent) {
        const std::string token = agent.tokens().create("tester");
        const int port = agent.start();
        return net::ApiClient({"http://127.0.0.1:" + std::to_string(port), token, ""});
    }
};
#endif

}  // namespace crucible::test
