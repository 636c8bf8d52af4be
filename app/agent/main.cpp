// crucible-agent --listen HOST:PORT --data DIR: the server on the GPU machine. Plain HTTP only
// on loopback; any other address needs TLS (a self-signed certificate is made on first start
// and its fingerprint printed) unless --insecure is given explicitly.
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/log.h"
#include "core/jobs/agent_service.h"

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) {
    g_stop = true;
}

std::filesystem::path default_worker(const char* argv0) {
    std::error_code ec;
    auto self = std::filesystem::canonical(std::filesystem::path(argv0), ec);
    if (ec) self = std::filesystem::absolute(argv0);
    auto dir = self.parent_path();
#ifdef _WIN32
    const char* name = "crucible-worker.exe";
#else
    const char* name = "crucible-worker";
#endif
    for (auto candidate : {dir / name, dir.parent_path() / "worker" / name})
        if (std::filesystem::exists(candidate, ec)) return candidate;
    return dir / name;
}

int agent_main(int argc, char** argv) {
    CLI::App app{"crucible-agent: Crucible's GPU server (HTTP API, job queue, GPUs)"};
    std::string listen = "127.0.0.1:7443", data, cert, key, worker, log_level = "info", nvml;
    bool insecure = false;
    int max_cpu_jobs = 0;
    app.add_option("--listen", listen, "HOST:PORT to listen on (default 127.0.0.1:7443)");
    app.add_option("--data", data, "data folder (jobs, blobs, datasets, tokens)")->required();
    app.add_option("--cert", cert, "TLS certificate (PEM); default: self-signed in <data>/tls");
    app.add_option("--key", key, "TLS private key (PEM)");
    app.add_flag("--insecure", insecure,
                 "allow plain HTTP on a non-loopback address (tokens travel in clear)");
    app.add_option("--worker", worker,
                   "crucible-worker executable (default: next to this program)");
    app.add_option("--max-cpu-jobs", max_cpu_jobs, "jobs at once on a host without GPUs");
    app.add_option("--nvml", nvml, "NVML library to load (default: the driver's)");
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error");
    app.add_flag_callback("--version", [] {
        std::printf("crucible-agent %s\n", CRUCIBLE_VERSION);
        std::exit(0);
    });
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    crucible::jobs::AgentConfig config;
    config.data_dir = crucible::path_from_utf8(data);
    std::filesystem::create_directories(config.data_dir);
    crucible::init_logging({.level = log_level, .file = config.data_dir / "agent.log"});
    auto colon = listen.rfind(':');
    if (colon == std::string::npos)
        throw crucible::InputError("--listen", "expected HOST:PORT, e.g. 0.0.0.0:7443");
    config.host = listen.substr(0, colon);
    config.port = std::stoi(listen.substr(colon + 1));
    config.insecure = insecure;
    if (!cert.empty()) config.cert_file = crucible::path_from_utf8(cert);
    if (!key.empty()) config.key_file = crucible::path_from_utf8(key);
    config.scheduler.worker_program =
        worker.empty() ? default_worker(argv[0]) : crucible::path_from_utf8(worker);
    crucible::jobs::load_agent_config_file(config);
    if (max_cpu_jobs > 0) config.scheduler.max_cpu_jobs = max_cpu_jobs;
    if (!nvml.empty()) config.nvml_library = crucible::path_from_utf8(nvml);
    config.task_schemas = crucible::jobs::describe_tasks(config.scheduler.worker_program);

    crucible::jobs::AgentService service(config);
    int port = service.start();
    std::printf("crucible-agent %s listening on %s://%s:%d (data %s)\n", CRUCIBLE_VERSION,
                service.tls() ? "https" : "http", config.host.c_str(), port, data.c_str());
    if (service.tls())
        std::printf("TLS certificate fingerprint (SHA-256): %s\n", service.fingerprint().c_str());
    std::fflush(stdout);
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    while (!g_stop)
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    spdlog::info("stopping: running jobs checkpoint and resume when the agent starts again");
    service.stop(false);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return crucible::run_at_boundary("crucible-agent", agent_main, argc, argv);
}
