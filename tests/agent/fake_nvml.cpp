// A fake NVML for the GPU inventory tests: two GPUs, the second split into two MIG instances.
// The alarm tests steer it through the environment (read on every call):
// FAKE_NVML_UTIL_<i>, FAKE_NVML_TEMP_<i>, FAKE_NVML_MEM_USED_MB_<i> for GPU i.
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
static int g_handles[2 + 2];
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
    *n = 2;
    return 0;
}
FAKE_NVML_EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** h) {
    if (i >= 2) return 2;
    *h = &g_handles[i];
    return 0;
}
static int index_of(void* h) {
    return static_cast<int>(static_cast<int*>(h) - g_handles);
}
FAKE_NVML_EXPORT int nvmlDeviceGetName(void* h, char* s, unsigned n) {
    int i = index_of(h);
    copy_text(s, i == 0 ? "NVIDIA Fake A100" : i == 1 ? "NVIDIA Fake H100" : "MIG 3g.40gb", n);
    return 0;
}
FAKE_NVML_EXPORT int nvmlDeviceGetUUID(void* h, char* s, unsigned n) {
    copy_text(s, index_of(h) == 0 ? "GPU-aaaa" : "GPU-bbbb", n);
    return 0;
}
FAKE_NVML_EXPORT int nvmlDeviceGetMemoryInfo(void* h, Mem* m) {
    int i = index_of(h);
    m->total = i >= 2 ? 40ull << 30 : 80ull << 30;
    m->used = i == 0 ? 1ull << 30 : 0;
    if (i < 2)
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
    *h = &g_handles[2 + i];
    return 0;
}
}
