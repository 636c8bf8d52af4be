// `crucible-agent setup`: the machine checks as a table of facts, and the real executable run
// against the fake NVML and the fake worker (data folder, first admin token, report, exit code,
// a second run that changes nothing).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/base/child_process.h"
#include "core/base/file_io.h"
#include "core/base/folder_access.h"
#include "core/base/json.h"
#include "core/jobs/server_setup.h"
#include "core/net/token_store.h"
#include "tests/agent/agent_test_util.h"

using namespace crucible;
using jobs::StepStatus;

namespace {

net::GpuInfo gpu(int index, const std::string& uuid) {
    net::GpuInfo g;
    g.index = index;
    g.name = "NVIDIA H200";
    g.uuid = uuid;
    g.memory_total = 141ull << 30;
    return g;
}

// Two GPUs, a 13.0 driver and a LibTorch for CUDA 13.0 that sees both.
jobs::MachineFacts healthy() {
    jobs::MachineFacts f;
    f.nvml.nvml = true;
    f.nvml.driver_version = "580.65";
    f.nvml.cuda_driver_version = 13000;
    f.nvml.gpus = {gpu(0, "GPU-a"), gpu(1, "GPU-b")};
    f.worker_devices = Json{
        {"libtorch", "2.11.0"}, {"cuda_runtime", "13.0"}, {"cuda_devices", {"GPU-a", "GPU-b"}}};
    return f;
}

const jobs::SetupStep& step(const std::vector<jobs::SetupStep>& steps, const std::string& name) {
    for (const auto& s : steps)
        if (s.name == name) return s;
    throw std::runtime_error("no step " + name);
}

}  // namespace

TEST(ServerSetup, MachineChecksNameWhatToFix) {
    struct Case {
        const char* what;
        void (*change)(jobs::MachineFacts&);
        const char* step;
        StepStatus status;
        const char* fix_mentions;
    };
    const std::vector<Case> cases = {
        {"healthy", [](jobs::MachineFacts&) {}, "cuda", StepStatus::Ok, ""},
        {"no driver",
         [](jobs::MachineFacts& f) {
             f.nvml = {};
             f.nvml.note = "NVML not found";
         },
         "driver", StepStatus::Failed, "install the NVIDIA driver"},
        {"driver too old", [](jobs::MachineFacts& f) { f.nvml.cuda_driver_version = 12040; },
         "driver", StepStatus::Failed, "CUDA 13.0 or newer"},
        {"MIG without instances", [](jobs::MachineFacts& f) { f.nvml.gpus[1].mig_enabled = true; },
         "gpu 1", StepStatus::Failed, "-mig 0"},
        {"WDDM", [](jobs::MachineFacts& f) { f.nvml.gpus[0].driver_model = "WDDM"; }, "gpu 0",
         StepStatus::Warning, "Sysmem Fallback"},
        {"TCC", [](jobs::MachineFacts& f) { f.nvml.gpus[0].driver_model = "TCC"; }, "gpu 0",
         StepStatus::Ok, ""},
        {"CUDA sees one of two",
         [](jobs::MachineFacts& f) { f.worker_devices->at("cuda_devices") = {"GPU-a"}; }, "cuda",
         StepStatus::Failed, "does not see GPU 1"},
        {"worker missing",
         [](jobs::MachineFacts& f) {
             f.worker_devices.reset();
             f.worker_error = "cannot start crucible-worker.exe";
         },
         "cuda", StepStatus::Failed, "reinstall"},
        {"CPU-only LibTorch on a GPU server",
         [](jobs::MachineFacts& f) { f.worker_devices->at("cuda_runtime") = "none"; }, "cuda",
         StepStatus::Failed, "CUDA build of LibTorch"},
    };
    for (const auto& c : cases) {
        jobs::MachineFacts facts = healthy();
        c.change(facts);
        const auto steps = jobs::check_machine(facts);
        const auto& s = step(steps, c.step);
        EXPECT_EQ(s.status, c.status) << c.what << ": " << s.detail;
        EXPECT_NE(s.fix.find(c.fix_mentions), std::string::npos) << c.what << ": " << s.fix;
        jobs::SetupReport report;
        report.steps = steps;
        EXPECT_EQ(report.ok(), c.status != StepStatus::Failed) << c.what;
        EXPECT_EQ(report.to_json()["ok"], report.ok());
    }
}

// Windows' sysmem fallback decides what "out of memory" does on a GPU in WDDM mode: the report
// names the policy it read, and asks for a change only when the policy lets a run crawl.
TEST(ServerSetup, WddmGpuNamesTheSysmemFallbackPolicy) {
    using jobs::SysmemFallback;
    struct Case {
        jobs::SysmemFallbackReading reading;
        const char* detail_mentions;
        bool asks_for_the_policy;
    };
    const std::vector<Case> cases = {
        {{SysmemFallback::PreferNoFallback, ""},
         "sysmem fallback: prefer no sysmem fallback",
         false},
        {{SysmemFallback::DriverDefault, ""}, "sysmem fallback: driver default (falls back)", true},
        {{SysmemFallback::PreferFallback, ""}, "sysmem fallback: prefer sysmem fallback", true},
        {{SysmemFallback::Unknown, "nvapi64.dll not found (no NVIDIA driver)"},
         "sysmem fallback: unknown (nvapi64.dll not found (no NVIDIA driver))",
         true},
    };
    for (const auto& c : cases) {
        jobs::MachineFacts facts = healthy();
        facts.nvml.gpus[0].driver_model = "WDDM";
        facts.nvml.gpus[1].driver_model = "TCC";
        facts.sysmem_fallback = c.reading;
        const auto steps = jobs::check_machine(facts);
        const auto& wddm = step(steps, "gpu 0");
        EXPECT_EQ(wddm.status, StepStatus::Warning) << c.detail_mentions;
        EXPECT_NE(wddm.detail.find(c.detail_mentions), std::string::npos) << wddm.detail;
        EXPECT_NE(wddm.fix.find("-dm 1"), std::string::npos) << wddm.fix;
        EXPECT_EQ(wddm.fix.find("Prefer No Sysmem Fallback") != std::string::npos,
                  c.asks_for_the_policy)
            << wddm.fix;
        // TCC never falls back: nothing about the policy there.
        const auto& tcc = step(steps, "gpu 1");
        EXPECT_EQ(tcc.status, StepStatus::Ok);
        EXPECT_EQ(tcc.detail.find("sysmem"), std::string::npos) << tcc.detail;
    }
}

// NvAPI's status and value as the report reads them (the Windows read itself runs under wine:
// wine.nvapi).
TEST(ServerSetup, SysmemFallbackFromNvapiAnswers) {
    using jobs::SysmemFallback;
    EXPECT_EQ(jobs::sysmem_fallback_from_nvapi(0, 1).policy, SysmemFallback::PreferNoFallback);
    EXPECT_EQ(jobs::sysmem_fallback_from_nvapi(0, 2).policy, SysmemFallback::PreferFallback);
    EXPECT_EQ(jobs::sysmem_fallback_from_nvapi(0, 0).policy, SysmemFallback::DriverDefault);
    // Not in the profile: nobody changed it, so the driver's default applies.
    EXPECT_EQ(jobs::sysmem_fallback_from_nvapi(-160, 99).policy, SysmemFallback::DriverDefault);
    const auto odd = jobs::sysmem_fallback_from_nvapi(0, 3);
    EXPECT_EQ(odd.policy, SysmemFallback::Unknown);
    EXPECT_NE(odd.note.find("(3)"), std::string::npos) << odd.note;
    const auto denied = jobs::sysmem_fallback_from_nvapi(-175, 1);
    EXPECT_EQ(denied.policy, SysmemFallback::Unknown);
    EXPECT_NE(denied.note.find("status -175"), std::string::npos) << denied.note;
#ifndef _WIN32
    EXPECT_EQ(jobs::read_sysmem_fallback().policy, SysmemFallback::NotApplicable);
#endif
}

TEST(ServerSetup, CudaVersionTextIsReadStrictly) {
    EXPECT_EQ(jobs::cuda_version_number("13.0"), 13000);
    EXPECT_EQ(jobs::cuda_version_number("12.4"), 12040);
    for (const char* bad : {"", "none", "13", ".0", "13.", "13.0.1", "1x.0", "13.x", "-1.0",
                            "13.10", "99999999999.0", " 13.0"})
        EXPECT_EQ(jobs::cuda_version_number(bad), 0) << bad;
    EXPECT_EQ(jobs::cuda_version_text(13000), "13.0");
    EXPECT_EQ(jobs::cuda_version_text(0), "unknown");
}

// The real executable, against the fake NVML (GPU 0 "GPU-aaaa", GPU 1 split by MIG) and the
// fake worker (a CUDA 12.4 LibTorch that sees GPU 0). No service or firewall on Linux.
TEST(ServerSetup, CommandPreparesTheDataFolderAndTheFirstAdminOnceAndReports) {
    const auto dir = test::fresh_dir("setup");
    const auto data = dir / "agent data";
    const auto run_setup = [&](const std::string& name, const std::filesystem::path& data_arg) {
        ChildOptions child;
        child.program = CRUCIBLE_AGENT_EXE;
        child.args = {"setup",
                      "--data",
                      path_to_utf8(data_arg),
                      "--worker",
                      CRUCIBLE_FAKE_WORKER,
                      "--nvml",
                      CRUCIBLE_FAKE_NVML,
                      "--token-file",
                      path_to_utf8(dir / "admin.token"),
                      "--json"};
#ifdef _WIN32
        // Not from a unit test: the checklist's step 4b installs the service and opens the port.
        child.args.insert(child.args.end(), {"--no-service", "--no-firewall"});
#endif
        child.log_file = dir / (name + ".json");
        auto exit = ChildProcess::start(child)->wait_for(std::chrono::seconds(60));
        EXPECT_TRUE(exit.has_value());
        const std::string out = read_file_bytes(child.log_file);
        return std::make_pair(exit ? exit->code : -1, Json::parse(out));
    };

    const auto [code, report] = run_setup("first", data);
    EXPECT_EQ(code, 0) << report.dump(2);
    EXPECT_TRUE(report["ok"].get<bool>());
    std::map<std::string, std::string> status;
    for (const auto& s : report["steps"])
        status[s["step"].get<std::string>()] = s["status"].get<std::string>();
    EXPECT_EQ(status["driver"], "ok");
    EXPECT_EQ(status["gpu 0"], "ok");
    EXPECT_EQ(status["gpu 1"], "ok");  // MIG with its instances
    EXPECT_EQ(status["cuda"], "ok");
    EXPECT_EQ(status["data folder"], "done");
    EXPECT_EQ(status["admin token"], "done");
#ifndef _WIN32
    EXPECT_EQ(status["long paths"], "ok");  // no 260-character limit here
#endif
    EXPECT_EQ(status["firewall"], "skipped");  // Linux: advice only
    EXPECT_EQ(status["service"], "skipped");   // Linux: the systemd unit's job
#ifndef _WIN32
    EXPECT_EQ(folder_access(data).accounts, std::vector<std::string>{"owner"});
    // The token file alone is the owner's; its folder stays as it was.
    EXPECT_EQ(folder_access(dir / "admin.token").accounts, std::vector<std::string>{"owner"});
    EXPECT_EQ(std::filesystem::status(dir / "admin.token").permissions(),
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    EXPECT_NE(std::filesystem::status(dir).permissions() & std::filesystem::perms::others_read,
              std::filesystem::perms::none);
#else
    // The access lists themselves: wine.acl, and the checklist's steps 4.2 and 4b.1.
    EXPECT_FALSE(folder_access(data).inherits_from_parent);
    EXPECT_FALSE(folder_access(dir / "admin.token").inherits_from_parent);
#endif
    std::string token = read_file_bytes(dir / "admin.token");
    token.erase(token.find_last_not_of("\n") + 1);
    net::TokenStore tokens(data / "tokens.json");
    const auto who = tokens.verify(token);
    ASSERT_TRUE(who.has_value());
    EXPECT_EQ(who->role, net::TokenRole::Admin);

    // Again, named the long way round: nothing new, the same token still the only one, and the
    // report names the folder plainly.
    const auto [code2, report2] = run_setup("second", dir / "." / "agent data");
    EXPECT_EQ(code2, 0);
    for (const auto& s : report2["steps"]) {
        if (s["step"] == "data folder" || s["step"] == "admin token") {
            EXPECT_EQ(s["status"], "ok") << s.dump();
        }
        if (s["step"] == "data folder") {
            EXPECT_EQ(s["detail"].get<std::string>().rfind(path_to_utf8(data) + " (", 0), 0u)
                << s.dump();
        }
    }
    EXPECT_EQ(tokens.list().size(), 1u);
}

TEST(ServerSetup, CommandFailsWhenCudaMissesAGpu) {
    const auto dir = test::fresh_dir("setup_missing_gpu");
    ChildOptions child;
    child.program = CRUCIBLE_AGENT_EXE;
    child.args = {
        "setup",  "--data",          path_to_utf8(dir / "data"), "--worker", CRUCIBLE_FAKE_WORKER,
        "--nvml", CRUCIBLE_FAKE_NVML};
#ifdef _WIN32
    child.args.push_back("--no-firewall");  // not from a unit test (checklist step 4b)
#endif
    child.env = {{"FAKE_WORKER_CUDA_DEVICES", "[]"}};
    child.log_file = dir / "out.txt";
    auto exit = ChildProcess::start(child)->wait_for(std::chrono::seconds(60));
    ASSERT_TRUE(exit.has_value());
    EXPECT_EQ(exit->code, 1);
    const std::string out = read_file_bytes(child.log_file);
    EXPECT_NE(out.find("[failed ] cuda"), std::string::npos) << out;
    EXPECT_NE(out.find("does not see GPU 0"), std::string::npos) << out;
    EXPECT_NE(out.find("Not ready"), std::string::npos) << out;
    EXPECT_NE(out.find("[skipped] service: not installed while a step above failed"),
              std::string::npos)
        << out;
}
