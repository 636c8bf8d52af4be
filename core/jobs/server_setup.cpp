#include "core/jobs/server_setup.h"

#include <algorithm>
#include <set>

namespace crucible::jobs {

const char* step_status_name(StepStatus status) {
    switch (status) {
        case StepStatus::Ok:
            return "ok";
        case StepStatus::Done:
            return "done";
        case StepStatus::Warning:
            return "warning";
        case StepStatus::Failed:
            return "failed";
        case StepStatus::Skipped:
            return "skipped";
    }
    return "?";
}

bool SetupReport::ok() const {
    return std::none_of(steps.begin(), steps.end(),
                        [](const SetupStep& s) { return s.status == StepStatus::Failed; });
}

Json SetupReport::to_json() const {
    Json out = Json::array();
    for (const auto& s : steps)
        out.push_back({{"step", s.name},
                       {"status", step_status_name(s.status)},
                       {"detail", s.detail},
                       {"fix", s.fix}});
    return {{"ok", ok()}, {"steps", out}};
}

std::string SetupReport::to_text() const {
    std::string out;
    for (const auto& s : steps) {
        std::string tag = step_status_name(s.status);
        tag.resize(7, ' ');
        out += "  [" + tag + "] " + s.name + ": " + s.detail + "\n";
        if (!s.fix.empty()) out += "            -> " + s.fix + "\n";
    }
    out += ok() ? "The server is ready.\n"
                : "Not ready: do what the failed steps say, then run setup again.\n";
    return out;
}

int cuda_version_number(const std::string& text) {
    // Digits "." one digit, nothing else: what versionCUDART's text looks like ("13.0").
    const auto dot = text.find('.');
    if (dot == std::string::npos || dot == 0 || dot > 2 || text.size() != dot + 2) return 0;
    int major = 0;
    for (std::size_t i = 0; i < dot; ++i) {
        if (text[i] < '0' || text[i] > '9') return 0;
        major = major * 10 + (text[i] - '0');
    }
    const char minor = text[dot + 1];
    if (major < 1 || minor < '0' || minor > '9') return 0;
    return major * 1000 + (minor - '0') * 10;
}

std::string cuda_version_text(int version) {
    if (version <= 0) return "unknown";
    return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::vector<SetupStep> check_machine(const MachineFacts& facts) {
    std::vector<SetupStep> steps;
    const net::GpuReport& nvml = facts.nvml;

    // The CUDA runtime our LibTorch was built for decides the oldest driver that runs it.
    int needed = 0;
    std::string libtorch;
    std::vector<std::string> cuda_uuids;
    if (facts.worker_devices) {
        needed = cuda_version_number(facts.worker_devices->value("cuda_runtime", ""));
        libtorch = facts.worker_devices->value("libtorch", "");
        for (const auto& u : facts.worker_devices->value("cuda_devices", Json::array()))
            if (u.is_string()) cuda_uuids.push_back(u.get<std::string>());
    }

    SetupStep driver{"driver"};
    if (!nvml.nvml) {
        driver.status = StepStatus::Failed;
        driver.detail = nvml.note.empty() ? "NVML not available" : nvml.note;
        driver.fix =
            "install the NVIDIA driver (580 or newer for CUDA 13.0) and check with "
            "nvidia-smi; without it jobs run on the CPU only";
    } else {
        driver.detail = nvml.driver_version + " (supports CUDA " +
                        cuda_version_text(nvml.cuda_driver_version) + ")";
        if (needed > 0 && nvml.cuda_driver_version < needed) {
            driver.status = StepStatus::Failed;
            driver.fix = "LibTorch " + libtorch + " needs a driver for CUDA " +
                         cuda_version_text(needed) + " or newer: update the NVIDIA driver";
        }
    }
    steps.push_back(driver);

    for (const auto& g : nvml.gpus) {
        SetupStep gpu{"gpu " + std::to_string(g.index)};
        gpu.detail = g.name + ", " + std::to_string(g.memory_total >> 30) + " GiB";
        if (!g.driver_model.empty()) gpu.detail += ", " + g.driver_model;
        if (g.mig_enabled)
            gpu.detail += ", MIG with " + std::to_string(g.mig.size()) + " instances";
        if (g.mig_enabled && g.mig.empty()) {
            gpu.status = StepStatus::Failed;
            gpu.fix =
                "MIG is on but has no instances: create them (nvidia-smi mig -cgi ... -C) "
                "or turn MIG off (nvidia-smi -i " +
                std::to_string(g.index) + " -mig 0)";
        } else if (g.driver_model == "WDDM") {
            // TCC has no fallback; in WDDM the driver's policy decides what out of memory does.
            const SysmemFallbackReading& fallback = facts.sysmem_fallback;
            gpu.detail +=
                std::string(", sysmem fallback: ") + sysmem_fallback_name(fallback.policy);
            if (!fallback.note.empty()) gpu.detail += " (" + fallback.note + ")";
            gpu.status = StepStatus::Warning;
            gpu.fix =
                "WDDM shares the GPU with the display: a data-center GPU trains faster in "
                "TCC (nvidia-smi -i " +
                std::to_string(g.index) + " -dm 1, then reboot)";
            if (fallback.policy != SysmemFallback::PreferNoFallback)
                gpu.fix +=
                    ". In WDDM, set the NVIDIA Control Panel's 'CUDA - Sysmem Fallback Policy' "
                    "to 'Prefer No Sysmem Fallback', or a run that does not fit in GPU memory "
                    "crawls instead of failing";
        }
        steps.push_back(gpu);
    }

    SetupStep cuda{"cuda"};
    if (!facts.worker_devices) {
        cuda.status = StepStatus::Failed;
        cuda.detail = "crucible-worker could not be asked: " + facts.worker_error;
        cuda.fix = "reinstall Crucible's server part (the worker and its LibTorch DLLs)";
    } else if (needed == 0) {
        cuda.status = nvml.gpus.empty() ? StepStatus::Ok : StepStatus::Failed;
        cuda.detail = "LibTorch " + libtorch + " is a CPU-only build";
        if (!nvml.gpus.empty())
            cuda.fix = "install the CUDA build of LibTorch " + libtorch + " to use the GPUs";
    } else {
        cuda.detail = "LibTorch " + libtorch + " with CUDA " + cuda_version_text(needed) +
                      " sees " + std::to_string(cuda_uuids.size()) + " of " +
                      std::to_string(nvml.gpus.size()) + " GPUs";
        std::set<std::string> seen(cuda_uuids.begin(), cuda_uuids.end());
        std::vector<std::string> missing;
        for (const auto& g : nvml.gpus)
            if (!g.mig_enabled && !seen.count(g.uuid)) missing.push_back(std::to_string(g.index));
        if (!missing.empty()) {
            std::string list;
            for (const auto& m : missing)
                list += (list.empty() ? "" : ", ") + m;
            cuda.status = StepStatus::Failed;
            cuda.fix = "CUDA does not see GPU " + list +
                       " that NVML lists: check CUDA_VISIBLE_DEVICES in the service's "
                       "environment, and that the driver's CUDA version is at least " +
                       cuda_version_text(needed);
        }
    }
    steps.push_back(cuda);
    return steps;
}

}  // namespace crucible::jobs
