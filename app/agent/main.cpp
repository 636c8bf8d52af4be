// crucible-agent --listen HOST:PORT --data DIR: the server on the GPU machine
// (`crucible-agent setup` prepares the machine for it: setup_command.h). Plain HTTP only
// on loopback; any other address needs TLS (a self-signed certificate is made on first start
// and its fingerprint printed) unless --insecure is given explicitly. On Windows,
// --install-service / --uninstall-service register it with the Service Control Manager, which
// runs it with --service (see service_control.h); on Linux the systemd unit does that job.
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "app/agent/service_control.h"
#include "app/agent/setup_command.h"
#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/folder_access.h"
#include "core/base/log.h"
#include "core/base/stop_signal.h"
#include "core/jobs/agent_service.h"
#include "core/net/open_files.h"

namespace {

int agent_main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "setup")
        return crucible::agent::run_setup_command(argc - 1, argv + 1);
    CLI::App app{"crucible-agent: Crucible's GPU server (HTTP API, job queue, GPUs)"};
    std::string listen = "127.0.0.1:7443", data, cert, key, worker, log_level = "info", nvml;
    std::string service_name = crucible::agent::kDefaultServiceName;
    bool insecure = false, install = false, uninstall = false, as_service = false;
    int max_cpu_jobs = 0;
    double idle_exit = 0;
    app.add_option("--listen", listen, "HOST:PORT to listen on (default 127.0.0.1:7443)");
    auto* data_opt = app.add_option("--data", data, "data folder (jobs, blobs, datasets, tokens)");
    app.add_option("--cert", cert, "TLS certificate (PEM); default: self-signed in <data>/tls");
    app.add_option("--key", key, "TLS private key (PEM)");
    app.add_flag("--insecure", insecure,
                 "allow plain HTTP on a non-loopback address (tokens travel in clear)");
    app.add_option("--worker", worker,
                   "crucible-worker executable (default: next to this program)");
    app.add_option("--max-cpu-jobs", max_cpu_jobs, "jobs at once on a host without GPUs");
    app.add_option("--nvml", nvml, "NVML library to load (default: the driver's)");
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error");
    app.add_option("--idle-exit", idle_exit,
                   "exit after this many seconds without a queued or running job or a request "
                   "(the studio's private agent: training goes on after the studio closes, and "
                   "the agent ends by itself afterwards); 0 = never")
        ->check(CLI::NonNegativeNumber);
    app.add_flag("--install-service", install,
                 "Windows: register a service that runs this agent with these options at boot");
    app.add_flag("--uninstall-service", uninstall, "Windows: stop and remove the service");
    app.add_flag("--service", as_service,
                 "Windows: run under the Service Control Manager (set by --install-service)");
    app.add_option("--service-name", service_name, "Windows service name (default crucible-agent)");
    app.add_flag_callback("--version", [] {
        std::printf("crucible-agent %s\n", CRUCIBLE_VERSION);
        std::exit(0);
    });
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    if (uninstall) {
        std::string err = crucible::agent::uninstall_service(service_name);
        if (!err.empty()) throw crucible::Error(err);
        std::printf("service %s removed\n", service_name.c_str());
        return 0;
    }
    if (data_opt->count() == 0) throw crucible::InputError("--data", "name the data folder");
    crucible::jobs::AgentConfig config;
    config.data_dir = std::filesystem::absolute(crucible::path_from_utf8(data));
    auto colon = listen.rfind(':');
    if (colon == std::string::npos)
        throw crucible::InputError("--listen", "expected HOST:PORT, e.g. 0.0.0.0:7443");
    config.host = listen.substr(0, colon);
    try {
        config.port = std::stoi(listen.substr(colon + 1));
    } catch (const std::exception&) {
        throw crucible::InputError("--listen", "'" + listen + "': the port is not a number");
    }
    config.insecure = insecure;
    if (!cert.empty()) config.cert_file = std::filesystem::absolute(crucible::path_from_utf8(cert));
    if (!key.empty()) config.key_file = std::filesystem::absolute(crucible::path_from_utf8(key));
    config.scheduler.worker_program =
        worker.empty() ? crucible::sibling_program("crucible-worker", "worker")
                       : std::filesystem::absolute(crucible::path_from_utf8(worker));
    if (!nvml.empty()) config.nvml_library = crucible::path_from_utf8(nvml);

    if (install) {
        // The service starts in the system folder: every path it gets is absolute.
        std::vector<std::string> args = {
            "--listen",       listen,
            "--data",         crucible::path_to_utf8(config.data_dir),
            "--worker",       crucible::path_to_utf8(config.scheduler.worker_program),
            "--log-level",    log_level,
            "--service-name", service_name};
        if (!cert.empty())
            args.insert(args.end(), {"--cert", crucible::path_to_utf8(config.cert_file)});
        if (!key.empty())
            args.insert(args.end(), {"--key", crucible::path_to_utf8(config.key_file)});
        if (insecure) args.push_back("--insecure");
        if (max_cpu_jobs > 0)
            args.insert(args.end(), {"--max-cpu-jobs", std::to_string(max_cpu_jobs)});
        if (!nvml.empty()) args.insert(args.end(), {"--nvml", nvml});
        // The service runs as its own virtual account (NT SERVICE\<name>), not LocalSystem:
        // the data folder is that account's, the Administrators' and SYSTEM's alone.
        std::filesystem::create_directories(config.data_dir);
        crucible::make_folder_private(config.data_dir,
                                      {crucible::agent::service_account(service_name)});
        std::string err = crucible::agent::install_service(service_name, args);
        if (!err.empty()) throw crucible::Error(err);
        std::printf("service %s installed (starts at boot; start it now with: sc start %s)\n",
                    service_name.c_str(), service_name.c_str());
        return 0;
    }

    std::unique_ptr<crucible::jobs::AgentService> service;
    // All of the start is inside `start`: a service must reach the Service Control Manager
    // within 30 s (then it reports progress while this runs), and what fails here must reach
    // its event log, which only the service's own code writes.
    auto start = [&] {
        crucible::agent::make_new_files_private();
        std::filesystem::create_directories(config.data_dir);
        // A data folder made by an older agent (0755, or on Windows one that inherits C:\'s
        // access list) is closed too: it holds tokens, the TLS key and every user's datasets
        // and weights.
        crucible::make_folder_private(config.data_dir);
        // As a service, warnings and errors (alarms among them) also go to the event log.
        crucible::init_logging({.level = log_level,
                                .file = config.data_dir / "agent.log",
                                .console = !as_service,
                                .event_log_source = as_service ? service_name : std::string()});
        crucible::jobs::load_agent_config_file(config);
        // Every client connection is a descriptor: the soft limit (often 1,024) goes up to the
        // hard one, and the server holds its connection cap under what it gets.
        const std::uint64_t open_files = crucible::net::raise_open_file_limit();
        if (open_files > 0) spdlog::info("open-file limit {}", open_files);
        if (max_cpu_jobs > 0) config.scheduler.max_cpu_jobs = max_cpu_jobs;
        // Describing the tasks loads LibTorch in the worker (seconds, more on a cold disk).
        config.task_schemas = crucible::jobs::describe_tasks(config.scheduler.worker_program);
        service = std::make_unique<crucible::jobs::AgentService>(config);
        int port = service->start();
        spdlog::info("listening on {}://{}:{}", service->tls() ? "https" : "http", config.host,
                     port);
        std::printf("crucible-agent %s listening on %s://%s:%d (data %s)\n", CRUCIBLE_VERSION,
                    service->tls() ? "https" : "http", config.host.c_str(), port,
                    crucible::path_to_utf8(config.data_dir).c_str());
        if (service->tls())
            std::printf("TLS certificate fingerprint (SHA-256): %s\n",
                        service->fingerprint().c_str());
        std::fflush(stdout);
    };
    auto stop = [&] {
        spdlog::info("stopping: running jobs checkpoint and resume when the agent starts again");
        if (service) service->stop(false);
    };
    if (as_service) {
        std::string err = crucible::agent::run_as_service(service_name, start, stop);
        if (!err.empty()) throw crucible::Error(err);
        return 0;
    }
    start();
    // Ctrl+C, SIGTERM; on Windows also closing the console, logoff, shutdown and the studio's
    // stop event: running jobs checkpoint before the agent exits.
    crucible::listen_for_stop_requests();
    while (!crucible::stop_requested()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        if (idle_exit > 0 && service->seconds_idle() >= idle_exit) {
            spdlog::info("idle for {} s: exiting (--idle-exit)", idle_exit);
            break;
        }
    }
    stop();
    crucible::stop_finished();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return crucible::run_at_boundary("crucible-agent", agent_main, argc, argv);
}
