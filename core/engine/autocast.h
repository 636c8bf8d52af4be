#pragma once
// RAII autocast: inside a guard, LibTorch runs matrix products and convolutions in a reduced
// precision (fp16 or bf16) and keeps precision-sensitive ops (losses, reductions; on CUDA also
// softmax) in fp32. fp16 training pairs it with DynamicLossScaler; bf16 needs no scaling.
#include <c10/core/Device.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <string>

namespace crucible::engine {

struct AutocastMode {
    bool enabled = false;
    c10::DeviceType device = c10::DeviceType::CUDA;
    c10::ScalarType dtype = c10::ScalarType::Half;

    // fp16 on CUDA, the default of training and inference on a GPU.
    static AutocastMode cuda_fp16(bool enabled) { return {enabled}; }
    // "off", "fp16" or "bf16": how logs and benchmark results name the precision.
    const char* name() const;
};

// The autocast a training run gets from its `amp` and `amp_dtype` options: on CUDA, fp16 or
// bf16 whenever amp is on; on the CPU only bf16, and only when asked for (amp_dtype=bf16), since
// fp16 autocast has no fast CPU kernels and bf16 has them only on CPUs with bf16 instructions.
AutocastMode training_autocast(bool amp, const std::string& amp_dtype, const c10::Device& device);
// Whether this CPU computes bf16 natively (AMX or AVX-512 BF16): there bf16 convolutions and
// matmuls run about twice as fast as fp32; elsewhere they are emulated and slower than fp32.
bool cpu_has_native_bf16();

// The autocast this thread runs under now, CUDA's if on, else the CPU's (a recomputation in
// backward repeats it).
AutocastMode current_autocast();
// Whether CUDA autocast is on for this thread now.
bool cuda_autocast_active();

class AutocastGuard {
  public:
    explicit AutocastGuard(AutocastMode mode);
    ~AutocastGuard();
    AutocastGuard(const AutocastGuard&) = delete;
    AutocastGuard& operator=(const AutocastGuard&) = delete;

  private:
    AutocastMode mode_;
    bool previous_enabled_ = false;
    c10::ScalarType previous_dtype_ = c10::ScalarType::Half;
};

}  // namespace crucible::engine
