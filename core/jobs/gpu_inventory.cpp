#include "core/jobs/gpu_inventory.h"

#include "core/jobs/shared_library.h"

namespace crucible::jobs {

namespace {

// The few NVML entry points we use, declared by their documented C signatures.
using nvmlReturn = int;
struct NvmlMemory {
    unsigned long long total, free, used;
};
struct NvmlUtilization {
    unsigned gpu, memory;
};
struct NvmlProcessInfo {
    unsigned pid;
    unsigned long long used_gpu_memory;
    unsigned gpu_instance_id, compute_instance_id;
};
using Device = void*;

class NvmlInventory final : public GpuInventory {
  public:
    explicit NvmlInventory(std::unique_ptr<SharedLibrary> lib) : lib_(std::move(lib)) {}

    GpuReport read() override {
        GpuReport r;
        if (!lib_) {
            r.note = "NVML not found (no NVIDIA driver): CPU only";
            return r;
        }
        auto init = lib_->symbol<nvmlReturn (*)()>("nvmlInit_v2");
        auto count_fn = lib_->symbol<nvmlReturn (*)(unsigned*)>("nvmlDeviceGetCount_v2");
        auto handle_fn =
            lib_->symbol<nvmlReturn (*)(unsigned, Device*)>("nvmlDeviceGetHandleByIndex_v2");
        if (!init || !count_fn || !handle_fn || init() != 0) {
            r.note = "NVML could not be initialised: is the NVIDIA driver loaded?";
            return r;
        }
        r.nvml = true;
        char text[256] = {};
        if (auto f = lib_->symbol<nvmlReturn (*)(char*, unsigned)>("nvmlSystemGetDriverVersion");
            f && f(text, sizeof text) == 0)
            r.driver_version = text;
        if (auto f = lib_->symbol<nvmlReturn (*)(int*)>("nvmlSystemGetCudaDriverVersion"); f)
            f(&r.cuda_driver_version);
        unsigned count = 0;
        count_fn(&count);
        for (unsigned i = 0; i < count && i < 64; ++i) {
            Device dev = nullptr;
            if (handle_fn(i, &dev) != 0) continue;
            GpuInfo g;
            g.index = static_cast<int>(i);
            if (auto f = lib_->symbol<nvmlReturn (*)(Device, char*, unsigned)>("nvmlDeviceGetName");
                f && f(dev, text, sizeof text) == 0)
                g.name = text;
            if (auto f = lib_->symbol<nvmlReturn (*)(Device, char*, unsigned)>("nvmlDeviceGetUUID");
                f && f(dev, text, sizeof text) == 0)
                g.uuid = text;
            NvmlMemory mem{};
            if (auto f =
                    lib_->symbol<nvmlReturn (*)(Device, NvmlMemory*)>("nvmlDeviceGetMemoryInfo");
                f && f(dev, &mem) == 0) {
                g.memory_total = mem.total;
                g.memory_used = mem.used;
            }
            NvmlUtilization util{};
            if (auto f = lib_->symbol<nvmlReturn (*)(Device, NvmlUtilization*)>(
                    "nvmlDeviceGetUtilizationRates");
                f && f(dev, &util) == 0)
                g.utilization = static_cast<int>(util.gpu);
            unsigned temp = 0;
            if (auto f = lib_->symbol<nvmlReturn (*)(Device, int, unsigned*)>(
                    "nvmlDeviceGetTemperature");
                f && f(dev, 0, &temp) == 0)
                g.temperature = static_cast<int>(temp);
            unsigned mw = 0;
            if (auto f = lib_->symbol<nvmlReturn (*)(Device, unsigned*)>("nvmlDeviceGetPowerUsage");
                f && f(dev, &mw) == 0)
                g.power_w = mw / 1000.0;
            NvmlProcessInfo procs[64];
            unsigned n = 64;
            if (auto f = lib_->symbol<nvmlReturn (*)(Device, unsigned*, NvmlProcessInfo*)>(
                    "nvmlDeviceGetComputeRunningProcesses_v3");
                f && f(dev, &n, procs) == 0)
                for (unsigned p = 0; p < n && p < 64; ++p)
                    g.process_ids.push_back(procs[p].pid);
            unsigned current = 0, pending = 0;
            if (auto f = lib_->symbol<nvmlReturn (*)(Device, unsigned*, unsigned*)>(
                    "nvmlDeviceGetMigMode");
                f && f(dev, &current, &pending) == 0)
                g.mig_enabled = current == 1;
            if (g.mig_enabled) {
                auto max_fn = lib_->symbol<nvmlReturn (*)(Device, unsigned*)>(
                    "nvmlDeviceGetMaxMigDeviceCount");
                auto mig_fn = lib_->symbol<nvmlReturn (*)(Device, unsigned, Device*)>(
                    "nvmlDeviceGetMigDeviceHandleByIndex");
                unsigned max_mig = 0;
                if (max_fn && mig_fn && max_fn(dev, &max_mig) == 0) {
                    for (unsigned m = 0; m < max_mig && m < 16; ++m) {
                        Device mig = nullptr;
                        if (mig_fn(dev, m, &mig) != 0) continue;
                        MigInstance mi;
                        mi.index = static_cast<int>(m);
                        if (auto f = lib_->symbol<nvmlReturn (*)(Device, char*, unsigned)>(
                                "nvmlDeviceGetName");
                            f && f(mig, text, sizeof text) == 0)
                            mi.name = text;
                        if (auto f = lib_->symbol<nvmlReturn (*)(Device, NvmlMemory*)>(
                                "nvmlDeviceGetMemoryInfo");
                            f && f(mig, &mem) == 0)
                            mi.memory_total = mem.total;
                        g.mig.push_back(mi);
                    }
                }
            }
            int model = -1, pending_model = -1;
            if (auto f =
                    lib_->symbol<nvmlReturn (*)(Device, int*, int*)>("nvmlDeviceGetDriverModel");
                f && f(dev, &model, &pending_model) == 0)
                g.driver_model = model == 0   ? "WDDM"
                                 : model == 1 ? "TCC"
                                 : model == 2 ? "MCDM"
                                              : "";
            r.gpus.push_back(std::move(g));
        }
        if (r.gpus.empty()) r.note = "NVML found no GPU";
        return r;
    }

    GpuTopology topology() override {
        GpuTopology t;
        if (!lib_) return t;
        auto init = lib_->symbol<nvmlReturn (*)()>("nvmlInit_v2");
        auto count_fn = lib_->symbol<nvmlReturn (*)(unsigned*)>("nvmlDeviceGetCount_v2");
        auto handle_fn =
            lib_->symbol<nvmlReturn (*)(unsigned, Device*)>("nvmlDeviceGetHandleByIndex_v2");
        // nvmlDeviceGetTopologyCommonAncestor's levels are the costs themselves (0 ... 50).
        auto ancestor_fn = lib_->symbol<nvmlReturn (*)(Device, Device, int*)>(
            "nvmlDeviceGetTopologyCommonAncestor");
        auto p2p_fn =
            lib_->symbol<nvmlReturn (*)(Device, Device, int, int*)>("nvmlDeviceGetP2PStatus");
        if (!init || !count_fn || !handle_fn || init() != 0) return t;
        unsigned count = 0;
        count_fn(&count);
        std::vector<Device> devices;
        for (unsigned i = 0; i < count && i < 64; ++i) {
            Device dev = nullptr;
            devices.push_back(handle_fn(i, &dev) == 0 ? dev : nullptr);
        }
        constexpr int kP2pCapsNvLink = 2, kP2pStatusOk = 0;
        for (std::size_t a = 0; a < devices.size(); ++a)
            for (std::size_t b = a + 1; b < devices.size(); ++b) {
                if (!devices[a] || !devices[b]) continue;
                int status = -1, level = -1;
                const std::pair<int, int> pair{static_cast<int>(a), static_cast<int>(b)};
                if (p2p_fn && p2p_fn(devices[a], devices[b], kP2pCapsNvLink, &status) == 0 &&
                    status == kP2pStatusOk)
                    t.cost[pair] = kNvLinkCost;
                else if (ancestor_fn && ancestor_fn(devices[a], devices[b], &level) == 0 &&
                         level >= 0 && level <= kUnknownCost)
                    t.cost[pair] = level;
            }
        return t;
    }

  private:
    std::unique_ptr<SharedLibrary> lib_;
};

}  // namespace

std::unique_ptr<GpuInventory> GpuInventory::open(const std::filesystem::path& library) {
    std::unique_ptr<SharedLibrary> lib;
    if (!library.empty())
        lib = SharedLibrary::open(library);
    else {
#ifdef _WIN32
        lib = SharedLibrary::open("nvml.dll");
#else
        lib = SharedLibrary::open("libnvidia-ml.so.1");
#endif
    }
    return std::make_unique<NvmlInventory>(std::move(lib));
}

}  // namespace crucible::jobs
