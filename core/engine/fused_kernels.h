#pragma once
// One switch for Crucible's fused CPU training kernels: batch norm + SiLU (bn_silu.h), channel
// concatenation and chunking (channel_cat.h) and detection's DFL expectation
// (plugins/detect/model/dfl_simd.h). On by default; off makes each of them decline, so LibTorch's
// own ops run and a benchmark or a test can compare both paths in one process. Process-wide.
namespace crucible::engine {

bool fused_cpu_kernels_enabled();
void set_fused_cpu_kernels_enabled(bool enabled);

}  // namespace crucible::engine
