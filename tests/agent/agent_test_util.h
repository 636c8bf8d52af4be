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

}  // namespace crucible::test
