#pragma once
// Whether an exception means the device or the host ran out of memory, by its type where LibTorch
// gives one: the CUDA caching allocator throws c10::OutOfMemoryError, a CUDA call that fails for
// want of memory (cuBLAS or cuDNN workspaces) c10::AcceleratorError with cudaErrorMemoryAllocation,
// and new throws std::bad_alloc. Only LibTorch's CPU allocator throws a plain c10::Error (from an
// enforce), recognised by the fixed words of that one check, not by any "out of memory" text.
#include <exception>

namespace crucible::engine {

bool is_out_of_memory(const std::exception& e);

}  // namespace crucible::engine
