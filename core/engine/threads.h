#pragma once
// CPU threads for LibTorch. Debian's LibTorch 1.13 uses the OpenMP backend and, with
// OMP_NUM_THREADS unset, starts with at::get_num_threads() == 1 on the 2-vCPU CI machines (its
// default is its own estimate of physical cores, and omp_get_max_threads() reports 1 there), so
// training would use one core. The engine sets the intra-op thread count explicitly.
namespace crucible::engine {

// Sets LibTorch's intra-op threads to `requested` (0: every hardware thread); returns the count
// now in use.
int configure_cpu_threads(int requested);

}  // namespace crucible::engine
