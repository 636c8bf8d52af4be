#include "app/agent/setup_command.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "app/agent/service_control.h"
#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/folder_access.h"
#include "core/base/long_paths.h"
#include "core/jobs/gpu_inventory.h"
#include "core/jobs/server_setup.h"
#include "core/jobs/sysmem_fallback.h"
#include "core/jobs/worker_query.h"
#include "core/net/token_store.h"

namespace crucible::agent {
namespace {

namespace fs = std::filesystem;
using jobs::SetupStep;
using jobs::StepStatus;

struct SetupOptions {
    std::string data, listen = "0.0.0.0:7443", worker, nvml, token_file;
    std::string service_name = kDefaultServiceName;
    bool no_service = false, no_firewall = false, json = false;
};

fs::path default_data_folder() {
#ifdef _WIN32
    if (auto program_data = nonempty_environment_variable("ProgramData"))
        return path_from_utf8(*program_data) / "Crucible" / "agent";
#endif
    return "/var/lib/crucible";  // as crucible-agent.service has it
}

int port_of(const std::string& listen) {
    const auto colon = listen.rfind(':');
    try {
        const int port = std::stoi(listen.substr(colon == std::string::npos ? 0 : colon + 1));
        if (port > 0 && port < 65536) return port;
    } catch (const std::exception&) {
    }
    throw InputError("--listen", "'" + listen + "' is not HOST:PORT");
}

SetupStep data_folder_step(const fs::path& data, const std::string& service_name) {
    SetupStep step{"data folder"};
    std::error_code ec;
    const bool existed = fs::is_directory(data, ec);
    try {
        fs::create_directories(data);
        // The service's own account, SYSTEM and Administrators: nobody else may read tokens,
        // the TLS key or the users' datasets (POSIX: 0700, the agent's user).
        make_folder_private(data, {service_account(service_name)});
        step.status = existed ? StepStatus::Ok : StepStatus::Done;
        step.detail =
            path_to_utf8(data) + (existed ? " (exists; made private)" : " (created, private)");
    } catch (const std::exception& e) {
        step.status = StepStatus::Failed;
        step.detail = e.what();
        step.fix = "run setup as administrator (root on Linux), or choose another --data";
    }
    return step;
}

SetupStep admin_token_step(const fs::path& data, const std::string& token_file) {
    SetupStep step{"admin token"};
    try {
        net::TokenStore tokens(data / "tokens.json");
        for (const auto& t : tokens.list())
            if (t.role == net::TokenRole::Admin && !t.expired(0)) {
                step.detail = "'" + t.name + "' exists (tokens are shown only when made)";
                return step;
            }
        const std::string token = tokens.create("admin", {.role = net::TokenRole::Admin});
        step.status = StepStatus::Done;
        if (!token_file.empty()) {
            const fs::path file = path_from_utf8(token_file);
            // Its folder may be readable by every local user (%ProgramData%\Crucible): the
            // file alone is closed, from the moment it exists.
            write_secret_file(file, token + "\n");
            step.detail = "'admin' created; its token is in " + token_file;
        } else {
            step.detail = "'admin' created: " + token + " (shown once: keep it)";
        }
    } catch (const std::exception& e) {
        step.status = StepStatus::Failed;
        step.detail = e.what();
        step.fix = "check that the data folder is writable";
    }
    return step;
}

// Windows only has something to do: elsewhere paths have no 260-character limit.
SetupStep long_paths_step() {
    SetupStep step{"long paths"};
    if (long_paths_enabled()) {
        step.detail = "paths over 260 characters work";
        return step;
    }
    const std::string error = enable_long_paths();
    if (error.empty()) {
        step.status = StepStatus::Done;
        step.detail = "enabled (LongPathsEnabled = 1): datasets and runs in deep folders work";
    } else {
        // The agent still runs; only paths over 260 characters fail.
        step.status = StepStatus::Warning;
        step.detail = error;
        step.fix = "enable the policy 'Enable Win32 long paths' (or set LongPathsEnabled to 1)";
    }
    return step;
}

SetupStep firewall_step(const SetupOptions& o, int port) {
    SetupStep step{"firewall"};
    if (o.no_firewall) {
        step.status = StepStatus::Skipped;
        step.detail = "--no-firewall";
        return step;
    }
    const FirewallResult result = open_firewall_port("Crucible agent", port);
    step.status = result.opened          ? StepStatus::Done
                  : result.error.empty() ? StepStatus::Skipped
                                         : StepStatus::Failed;
    step.detail = result.opened ? "TCP " + std::to_string(port) + " open (rule 'Crucible agent')"
                  : result.error.empty() ? result.advice
                                         : result.error;
    if (!result.error.empty()) step.fix = result.advice;
    return step;
}

SetupStep service_step(const SetupOptions& o, const fs::path& data) {
    SetupStep step{"service"};
    if (o.no_service) {
        step.status = StepStatus::Skipped;
        step.detail = "--no-service";
        return step;
    }
    std::vector<std::string> args = {"--listen", o.listen, "--data", path_to_utf8(data)};
    if (!o.worker.empty()) args.insert(args.end(), {"--worker", o.worker});
    if (!o.nvml.empty()) args.insert(args.end(), {"--nvml", o.nvml});
    const ServiceResult result = install_and_start_service(o.service_name, args);
    step.status = result.error.empty()
                      ? (result.installed ? StepStatus::Done : StepStatus::Ok)
                      : (result.not_here ? StepStatus::Skipped : StepStatus::Failed);
    step.detail = result.error.empty() ? result.detail : result.error;
    if (!result.error.empty() && !result.not_here) step.fix = result.advice;
    return step;
}

}  // namespace

int run_setup_command(int argc, char** argv) {
    SetupOptions o;
    CLI::App app{
        "Makes this machine a Crucible GPU server in one command: checks the NVIDIA driver\n"
        "against the CUDA runtime of the worker's LibTorch, lists every GPU (driver model,\n"
        "MIG), checks that CUDA sees what NVML sees, creates the private data folder and the\n"
        "first admin token, opens the firewall port and installs and starts the service\n"
        "(Windows). Run it again at any time: it changes only what is missing.",
        "crucible-agent setup"};
    app.add_option("--data", o.data, "data folder (default %ProgramData%\\Crucible\\agent)");
    app.add_option("--listen", o.listen, "address the service listens on (default 0.0.0.0:7443)");
    app.add_option("--worker", o.worker, "crucible-worker to use (default: beside this program)");
    app.add_option("--nvml", o.nvml, "NVML library (default: the driver's)");
    app.add_option("--token-file", o.token_file,
                   "write the first admin token to this file instead of printing it");
    app.add_option("--service-name", o.service_name, "Windows service name");
    app.add_flag("--no-service", o.no_service, "do not install or start the service");
    app.add_flag("--no-firewall", o.no_firewall, "do not open the firewall port");
    app.add_flag("--json", o.json, "print the report as JSON");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
    const int port = port_of(o.listen);
    const fs::path data = o.data.empty() ? default_data_folder()
                                         : fs::absolute(path_from_utf8(o.data)).lexically_normal();
    const fs::path worker = o.worker.empty()
                                ? sibling_program("crucible-worker", "worker")
                                : fs::absolute(path_from_utf8(o.worker)).lexically_normal();
    if (!o.worker.empty()) o.worker = path_to_utf8(worker);

    jobs::MachineFacts facts;
    facts.nvml = jobs::GpuInventory::open(path_from_utf8(o.nvml))->read();
    // The policy matters only to a GPU in WDDM mode: servers without one never load NvAPI.
    if (std::any_of(facts.nvml.gpus.begin(), facts.nvml.gpus.end(),
                    [](const net::GpuInfo& g) { return g.driver_model == "WDDM"; }))
        facts.sysmem_fallback = jobs::read_sysmem_fallback();
    try {
        facts.worker_devices = jobs::query_worker(worker, "devices");
    } catch (const std::exception& e) {
        facts.worker_error = e.what();
    }
    jobs::SetupReport report;
    report.steps = jobs::check_machine(facts);
    report.steps.push_back(data_folder_step(data, o.service_name));
    if (report.steps.back().status != StepStatus::Failed)
        report.steps.push_back(admin_token_step(data, o.token_file));
    report.steps.push_back(long_paths_step());
    report.steps.push_back(firewall_step(o, port));
    if (report.ok()) {
        report.steps.push_back(service_step(o, data));
    } else {
        report.steps.emplace_back("service", StepStatus::Skipped,
                                  "not installed while a step above failed");
    }
    if (o.json)
        std::printf("%s\n", report.to_json().dump(2).c_str());
    else
        std::printf("crucible-agent setup\n%s", report.to_text().c_str());
    return report.ok() ? 0 : 1;
}

}  // namespace crucible::agent
