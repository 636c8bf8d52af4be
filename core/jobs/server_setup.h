#pragma once
// `crucible-agent setup`: what the GPU-server guide asks of a person, checked and, where the
// program can, done: the NVIDIA driver against the CUDA runtime our LibTorch needs, every GPU
// with its driver model (WDDM/TCC), MIG state and (WDDM) sysmem fallback policy, CUDA and NVML
// seeing the same GPUs, the data folder with its access list, the first admin token, the firewall
// port, the service. This file holds the report and the checks that need no system access (tested
// with tables); the steps that change the machine are in app/agent/setup_command.cpp.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/json.h"
#include "core/jobs/sysmem_fallback.h"
#include "core/net/api_types.h"

namespace crucible::jobs {

enum class StepStatus {
    Ok,       // as it should be; nothing done
    Done,     // changed by this run (created, installed, opened)
    Warning,  // works, but slower or riskier than it could be: `fix` says what to change
    Failed,   // training cannot work until `fix` is done
    Skipped,  // not asked for, or not this platform's business: `detail` says why
};
const char* step_status_name(StepStatus status);  // "ok", "done", "warning", "failed", "skipped"

struct SetupStep {
    explicit SetupStep(std::string step_name, StepStatus step_status = StepStatus::Ok,
                       std::string step_detail = {}, std::string step_fix = {})
        : name(std::move(step_name)),
          status(step_status),
          detail(std::move(step_detail)),
          fix(std::move(step_fix)) {}
    std::string name;  // "driver", "gpu 0", "cuda", "data folder", "admin token", ...
    StepStatus status = StepStatus::Ok;
    std::string detail;  // what was found or done
    std::string fix;     // what to do, when status is Warning or Failed
};

struct SetupReport {
    std::vector<SetupStep> steps;
    // False when any step failed (the command's exit code is then 1).
    bool ok() const;
    Json to_json() const;
    // One line per step, "  [ ok ] driver: 580.65 (CUDA 13.0)", fixes indented below.
    std::string to_text() const;
};

// What the machine told us: NVML's report, Windows' sysmem fallback policy (it matters for GPUs
// in WDDM mode), and `crucible-worker devices` (what LibTorch and CUDA see) or why it could not
// be asked.
struct MachineFacts {
    net::GpuReport nvml;
    SysmemFallbackReading sysmem_fallback{SysmemFallback::NotApplicable, {}};
    std::optional<Json> worker_devices;
    std::string worker_error;
};

// "13.0" -> 13000, NVML's encoding of CUDA versions; 0 for "none" or anything unreadable.
int cuda_version_number(const std::string& text);
// 13000 -> "13.0"; "unknown" for 0 (NVML could not tell).
std::string cuda_version_text(int version);

// The driver, each GPU, and whether CUDA sees what NVML sees. Pure: the same facts give the same
// steps on every platform.
std::vector<SetupStep> check_machine(const MachineFacts& facts);

}  // namespace crucible::jobs
