// A fake NVML for the GPU inventory tests: two GPUs, the second split into two MIG instances.
// The alarm tests steer it through the environment (read on every call):
// FAKE_NVML_UTIL_<i>, FAKE_NVML_TEMP_<i>, FAKE_NVML_MEM_USED_MB_<i> for GPU i. The placement
// tests: FAKE_NVML_COUNT (up to 8 GPUs), FAKE_NVML_TOPOLOGY ("0-1:10,0-2:50": NVML's common
// ancestor level of a pair; unlisted pairs 50) and FAKE_NVML_NVLINK ("1-3,0-2": NVLinked pairs).
// On Windows its functions are exported (__declspec(dllexport)), as nvml.dll's are.
#include <algorithm>
#include <cstring>
#include <string>

#include "core/base/environment.h"

#ifdef _WIN32
#define FAKE_NVML_EXPORT __declspec(dllexport)
#else
#define FAKE_NVML_EXPORT __attribute__((visibility("default")))
#endif

static long long env_or(const char* name, int gpu, long long fallback) {
    const auto v = crucible::environment_variable(std::string(name) + "_" + std::to_string(gpu));
    return v && !v->empty() ? std::stoll(*v) : fallback;
}

// NVML's string out-parameters: `text` cut to the buffer, always terminated.
static void copy_text(char* out, const char* text, unsigned size) {
    if (size == 0) return;
    const std::size_t n = std::min<std::size_t>(std::strlen(text), size - 1);
    std::memcpy(out, text, n);
    out[n] = '\0';
}

extern "C" {
struct Mem {
    unsigned long long total, free, used;
};
struct Util {
    unsigned gpu, memory;
};
struct Proc {
    unsigned pid;
    unsigned long long used;
    unsigned gi, ci;
};
constexpr int kMaxGpus = 8;
static int g_handles[kMaxGpus + 2];  // the GPUs, then GPU 1's two MIG instances

static int gpu_count() {
    const auto v = crucible::environment_variable("FAKE_NVML_COUNT");
    return v && !v->empty() ? std::clamp(std::stoi(*v), 0, kMaxGpus) : 2;
}

// The value of pair "a-b" (either order) in a list like "0-1:10,2-3:20" (no value: "1").
static std::string pair_value(const char* variable, int a, int b) {
    const std::string list = crucible::environment_variable(variable).value_or("");
    const std::string want[] = {std::to_string(a) + "-" + std::to_string(b),
                                std::to_string(b) + "-" + std::to_string(a)};
    std::size_t start = 0;
    while (start <= list.size()) {
        const std::size_t end = std::min(list.find(',', start), list.size());
        const std::string item = list.substr(start, end - start);
        const std::size_t colon = item.find(':');
        const std::string key = item.substr(0, colon);
        if (key == want[0] || key == want[1])
            return colon == std::string::npos ? "1" : item.substr(colon + 1);
        start = end + 1;
    }
    return "";
}
FAKE_NVML_EXPORT int nvmlInit_v2() {
    return 0;
}
FAKE_NVML_EXPORT int nvmlSystemGetDriverVersion(char* s, unsigned n) {
    copy_text(s, "550.54.15", n);
    return 0;
}
FAKE_NVML_EXPORT int nvmlSystemGetCudaDriverVersion(int* v) {
    *v = 12040;
    return 0;
}
FAKE_NVML_EXPORT int nvmlDeviceGetCount_v2(unsigned* n) {
    *n = static_cast<unsigned>(gpu_count());
    return 0;
}
FAKE_NVML_EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** h) {
    if (static_cast<int>(i) >= gpu_count()) return 2;
    *h = &g_handles[i];
    return 0;
}
static int index_of(void* h) {
    return static_cast<int>(static_cast<int*>(h) - g_handles);
}
FAKE_NVML_EXPORT int nvmlDeviceGetName(void* h, char* s, unsigned n) {
    int i = index_of(h);
    copy_text(s,
              i == 0         ? "NVIDIA Fake A100"
              : i < kMaxGpus ? "NVIDIA Fake H100"
                             : "MIG 3g.40gb",
              n);
    return 0;
}
FAKE_NVML_EXPORT int nvmlDeviceGetUUID(void* h, char* s, unsigned n) {
    const int i = index_of(h);
    copy_text(s,
              i == 0   ? "GPU-aaaa"
              : i == 1 ? "GPU-bbbb"
                       : ("GPU-" + std::to_string(i)).c_str(),
              n);
    return 0;
}
FAKE_NVML_EXPORT int nvmlDeviceGetMemoryInfo(void* h, Mem* m) {
    int i = index_of(h);
    m->total = i >= kMaxGpus ? 40ull << 30 : 80ull << 30;
    m->used = i == 0 ? 1ull << 30 : 0;
    if (i < kMaxGpus)
        m->used = static_cast<unsigned long long>(
            env_or("FAKE_NVML_MEM_USED_MB", i, static_cast<long long>(m->used >> 20)) << 20);
    m->free = m->total - m->used;
    return 0;
}
FAKE_NVML_EXPORT int nvmlDeviceGetUtilizationRates(void* h, Util* u) {
    u->gpu =
        static_cast<unsigned>(env_or("FAKE_NVML_UTIL", index_of(h), index_of(h) == 0 ? 87 : 0));
    u->memory = 10;
    return 0;
}
FAKE_NVML_EXPORT int nvmlDeviceGetTemperature(void* h, int, unsigned* t) {
    *t = static_cast<unsigned>(env_or("FAKE_NVML_TEMP", index_of(h), 61));
    return 0;
}
FAKE_NVML_EXPORT int nvmlDeviceGetPowerUsage(void*, unsigned* mw) {
    *mw = 250000;
    return 0;
}
FAKE_NVML_EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(void* h, unsigned* n, Proc* p) {
    if (index_of(h) == 0 && *n >= 1) {
        p[0] = {4242, 1ull << 30, 0, 0};
        *n = 1;
    } else {
        *n = 0;
    }
    return 0;
}
// Windows' driver model, only when FAKE_NVML_DRIVER_MODEL_<i> is set (0 WDDM, 1 TCC); NVML on
// Linux answers "not supported" (3).
FAKE_NVML_EXPORT int nvmlDeviceGetDriverModel(void* h, int* current, int* pending) {
    const long long model = env_or("FAKE_NVML_DRIVER_MODEL", index_of(h), -1);
    if (model < 0) return 3;
    *current = *pending = static_cast<int>(model);
    return 0;
}
FAKE_NVML_EXPORT int nvmlDeviceGetMigMode(void* h, unsigned* cur, unsigned* pend) {
    // FAKE_NVML_NO_MIG=1: two whole GPUs (the multi-GPU scheduling tests).
    const bool no_mig = crucible::environment_variable("FAKE_NVML_NO_MIG").value_or("") == "1";
    *cur = *pend = index_of(h) == 1 && !no_mig ? 1 : 0;
    return 0;
}
FAKE_NVML_EXPORT int nvmlDeviceGetMaxMigDeviceCount(void*, unsigned* n) {
    *n = 2;
    return 0;
}
FAKE_NVML_EXPORT int nvmlDeviceGetMigDeviceHandleByIndex(void*, unsigned i, void** h) {
    *h = &g_handles[kMaxGpus + i];
    return 0;
}
// The pair's level from FAKE_NVML_TOPOLOGY, 50 (across sockets) when unlisted.
FAKE_NVML_EXPORT int nvmlDeviceGetTopologyCommonAncestor(void* a, void* b, int* level) {
    const std::string v = pair_value("FAKE_NVML_TOPOLOGY", index_of(a), index_of(b));
    *level = v.empty() ? 50 : std::stoi(v);
    return 0;
}
// NVLink (caps index 2) status 0 for the pairs of FAKE_NVML_NVLINK, else "not supported" (5).
FAKE_NVML_EXPORT int nvmlDeviceGetP2PStatus(void* a, void* b, int caps, int* status) {
    *status =
        caps == 2 && !pair_value("FAKE_NVML_NVLINK", index_of(a), index_of(b)).empty() ? 0 : 5;
    return 0;
}
}
