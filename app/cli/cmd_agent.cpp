// `crucible agent token create|list|revoke` manages the agent's access tokens (only their hashes
// are stored, in <data>/tokens.json; the running agent picks up changes without a restart).
// `crucible agent doctor` reports what the GPU machine offers: NVML, driver and CUDA driver
// versions, every GPU, what this LibTorch sees, and what to fix.
#include <torch/torch.h>
#include <torch/version.h>

#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "app/cli/agent_data.h"
#include "app/cli/cli_parser.h"
#include "app/cli/command.h"
#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/jobs/gpu_inventory.h"
#include "core/jobs/server_setup.h"
#include "core/net/tls.h"
#include "core/net/token_store.h"

namespace crucible::cli {
namespace {

// Every token action reads the agent's data folder from --data.
CLI::Option* add_data(CLI::App& app, std::string& data) {
    return app.add_option("--data", data, "the agent's data folder (the --data of crucible-agent)");
}

std::filesystem::path tokens_file(const std::string& data) {
    return agent_data_folder(data) / "tokens.json";
}

void print_token_usage() {
    std::printf(
        "usage: crucible agent token create --name NAME [--role admin|user|viewer] "
        "[--expires 30d] --data DIR\n"
        "       crucible agent token list --data DIR\n"
        "       crucible agent token revoke NAME --data DIR\n\n"
        "create prints a new token once; only its SHA-256 is stored in DIR/tokens.json.\n"
        "Roles: user (the default) submits and sees only their own jobs, datasets and uploads;\n"
        "admin sees and controls everyone's; viewer sees every job's state and curves and\n"
        "changes nothing.\n"
        "Give it to a client with: crucible remote add NAME URL --token TOKEN\n");
}

int run_token(const std::vector<std::string>& args) {
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        print_token_usage();
        return args.empty() ? 2 : 0;
    }
    const std::string& action = args[0];
    const std::vector<std::string> words(args.begin() + 1, args.end());
    std::string data;
    if (action == "create") {
        CLI::App app{"Prints a new token once; only its SHA-256 is stored in DIR/tokens.json.",
                     "crucible agent token create"};
        std::string name, role = "user", expires;
        app.add_option("--name", name, "who uses the token");
        app.add_option("--role", role,
                       "user (own work only, the default), admin (everyone's) or viewer "
                       "(reads every job, changes nothing)");
        app.add_option("--expires", expires, "lifetime, e.g. 30d, 12h or 90m (default: none)");
        add_data(app, data);
        if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
        if (name.empty()) throw InputError("--name", "give the token a name (who uses it)");
        net::TokenOptions options;
        options.role = net::parse_token_role(role, "--role");
        if (!expires.empty())
            options.expires = unix_time_now() + net::parse_duration_seconds(expires, "--expires");
        net::TokenStore store(tokens_file(data));
        std::string token = store.create(name, options);
        std::printf("%s\n", token.c_str());
        std::fprintf(stderr,
                     "Token '%s' (%s) created. It is shown only this once; the agent keeps its "
                     "hash.\n",
                     name.c_str(), role.c_str());
        return 0;
    }
    if (action == "list") {
        CLI::App app{"Lists the agent's tokens (names and hash prefixes).",
                     "crucible agent token list"};
        add_data(app, data);
        if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
        net::TokenStore store(tokens_file(data));
        auto tokens = store.list();
        if (tokens.empty())
            std::printf("no tokens (create one with: crucible agent token create)\n");
        const auto utc = [](double t) {
            return utc_time_text(static_cast<std::time_t>(t), "%Y-%m-%d %H:%M:%SZ");
        };
        const double now = unix_time_now();
        for (const auto& t : tokens) {
            const std::string expiry = t.expires <= 0   ? "never expires"
                                       : t.expired(now) ? "EXPIRED " + utc(t.expires)
                                                        : "expires " + utc(t.expires);
            std::printf("%-24s %-6s created %s  %s  sha256 %.12s...\n", t.name.c_str(),
                        net::token_role_name(t.role), utc(t.created).c_str(), expiry.c_str(),
                        t.hash.c_str());
        }
        return 0;
    }
    if (action == "revoke") {
        CLI::App app{"Revokes a token: clients using it are refused from then on.",
                     "crucible agent token revoke"};
        std::string name;
        app.add_option("NAME", name, "the token's name");
        add_data(app, data);
        if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
        if (name.empty()) throw InputError("revoke", "name exactly one token to revoke");
        net::TokenStore store(tokens_file(data));
        if (!store.revoke(name))
            throw InputError(name, "no such token (see crucible agent token list)");
        std::printf("revoked '%s'; clients using it are refused from now on\n", name.c_str());
        return 0;
    }
    throw InputError(action, "unknown action; use create, list or revoke");
}

int run_doctor(const std::vector<std::string>& args) {
    CLI::App app{
        "Prints the NVIDIA driver and CUDA driver versions (from NVML), every GPU, what\n"
        "this build's LibTorch sees, and what to fix. With --data it also checks the\n"
        "agent's data folder (tokens, free space).",
        "crucible agent doctor"};
    std::string data, nvml;
    add_data(app, data);
    app.add_option("--nvml", nvml, "NVML library to load (default: the driver's)");
    if (parse_words(app, args) == Parsed::HelpPrinted) return 0;
    std::vector<std::string> fixes;

    auto inventory = jobs::GpuInventory::open(path_from_utf8(nvml));
    jobs::GpuReport report = inventory->read();
    std::printf("NVML:                %s\n", report.nvml ? "loaded" : "not available");
    if (!report.note.empty()) std::printf("                     %s\n", report.note.c_str());
    if (report.nvml) {
        std::printf("NVIDIA driver:       %s\n", report.driver_version.c_str());
        std::printf("CUDA driver API:     %s\n",
                    jobs::cuda_version_text(report.cuda_driver_version).c_str());
    } else {
        fixes.push_back(
            "NVML (libnvidia-ml.so.1 / nvml.dll) was not found: install the NVIDIA driver "
            "(Linux: the distribution's nvidia-driver package or NVIDIA's installer, then "
            "check with nvidia-smi; Windows: the GeForce/Studio/Data-Center driver). A machine "
            "without NVIDIA GPUs runs jobs on the CPU, which is fine for small tests.");
    }
    std::printf("GPUs:                %zu\n", report.gpus.size());
    for (const auto& g : report.gpus) {
        std::printf("  [%d] %s  %s\n", g.index, g.name.c_str(), g.uuid.c_str());
        std::printf("      memory %.1f / %.1f GiB, utilization %d%%, %d C, %.0f W, %zu processes\n",
                    static_cast<double>(g.memory_used) / (1ull << 30),
                    static_cast<double>(g.memory_total) / (1ull << 30), g.utilization,
                    g.temperature, g.power_w, g.process_ids.size());
        if (g.mig_enabled) {
            std::printf("      MIG enabled, %zu instances\n", g.mig.size());
            for (const auto& m : g.mig)
                std::printf("        MIG %d: %s, %.1f GiB\n", m.index, m.name.c_str(),
                            static_cast<double>(m.memory_total) / (1ull << 30));
            if (g.mig.empty())
                fixes.push_back("GPU " + std::to_string(g.index) +
                                " has MIG enabled but no instances: create them with "
                                "nvidia-smi mig -cgi ... -C, or disable MIG");
        }
        if (g.temperature >= 85)
            fixes.push_back("GPU " + std::to_string(g.index) + " runs at " +
                            std::to_string(g.temperature) + " C: check its cooling");
    }
    if (report.nvml && report.gpus.empty())
        fixes.push_back(
            "NVML is loaded but lists no GPU: check nvidia-smi, the driver's kernel "
            "module (lsmod | grep nvidia) and the GPU's power/PCIe seating");

    // What the LibTorch linked into this build sees.
    const bool torch_cuda = torch::cuda::is_available();
    const auto torch_devices = torch_cuda ? torch::cuda::device_count() : 0;
    std::printf("LibTorch:            %s (%s)\n", TORCH_VERSION,
                torch_cuda ? "CUDA build, CUDA usable" : "no usable CUDA");
    std::printf("LibTorch CUDA GPUs:  %zu\n", static_cast<std::size_t>(torch_devices));
    if (const auto vis = environment_variable("CUDA_VISIBLE_DEVICES"))
        std::printf("CUDA_VISIBLE_DEVICES=%s\n", vis->c_str());
    if (!report.gpus.empty() && !torch_cuda)
        fixes.push_back(
            "the GPUs are there but this LibTorch " TORCH_VERSION
            " cannot use them: it is a CPU-only build, or it was built for a newer CUDA than "
            "the driver supports (driver CUDA " +
            jobs::cuda_version_text(report.cuda_driver_version) +
            "). Install a CUDA build of LibTorch whose CUDA version is at most the driver's, or "
            "update the driver.");
    if (torch_cuda && static_cast<std::size_t>(torch_devices) < report.gpus.size())
        fixes.push_back("LibTorch sees " + std::to_string(torch_devices) + " of " +
                        std::to_string(report.gpus.size()) +
                        " GPUs: check CUDA_VISIBLE_DEVICES and MIG settings");

    if (!data.empty()) {
        auto dir = path_from_utf8(data);
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec)) {
            fixes.push_back("--data '" + data +
                            "' is not a folder; the agent creates it on "
                            "first start (crucible-agent --data " +
                            data + ")");
        } else {
            net::TokenStore store(dir / "tokens.json");
            auto n = store.list().size();
            std::printf("Data folder:         %s (%zu tokens)\n", data.c_str(), n);
            // What a client's first contact shows, to compare (the studio's trust dialog and
            // crucible remote add point here).
            const auto cert = net::self_signed_certificate_paths(dir).cert;
            if (std::filesystem::exists(cert, ec))
                std::printf("TLS fingerprint:     %s (SHA-256 of %s)\n",
                            net::certificate_fingerprint_file(cert).c_str(),
                            path_to_utf8(cert).c_str());
            else
                std::printf(
                    "TLS fingerprint:     none yet (the agent makes its certificate on "
                    "first start off loopback; with --cert, compare that file's)\n");
            if (n == 0)
                fixes.push_back(
                    "no access tokens: create one with crucible agent token create "
                    "--name NAME --data " +
                    data);
            auto space = std::filesystem::space(dir, ec);
            if (!ec) {
                std::printf("Free disk:           %.1f GiB\n",
                            static_cast<double>(space.available) / (1ull << 30));
                if (space.available < (10ull << 30))
                    fixes.push_back("less than 10 GiB free in " + data +
                                    ": jobs need room for checkpoints");
            }
        }
    }

    if (fixes.empty()) {
        std::printf("\nEverything looks fine.\n");
        return 0;
    }
    std::printf("\nTo fix:\n");
    for (const auto& fix : fixes)
        std::printf("  - %s\n", fix.c_str());
    return 1;
}

const RegisterSubcommand token_cmd({"agent", "token",
                                    "create, list or revoke the agent's access tokens",
                                    &run_token});
const RegisterSubcommand doctor_cmd(
    {"agent", "doctor", "driver, CUDA, GPUs and LibTorch compatibility on this machine",
     &run_doctor});

}  // namespace
}  // namespace crucible::cli
