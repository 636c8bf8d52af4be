// Out of memory is told by the exception's type: the caching allocator's OutOfMemoryError, a CUDA
// call's AcceleratorError with cudaErrorMemoryAllocation, std::bad_alloc, and the one fixed check
// of LibTorch's CPU allocator (a real allocation that fails, here). Errors that merely mention
// memory are not out of memory.
#include "core/engine/out_of_memory.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace crucible::engine {
namespace {

const c10::SourceLocation kHere{"test", "out_of_memory_test.cpp", 1};

TEST(OutOfMemory, ToldByTheExceptionsType) {
    EXPECT_TRUE(is_out_of_memory(c10::OutOfMemoryError(kHere, "CUDA out of memory. Tried ...")));
    EXPECT_TRUE(is_out_of_memory(c10::AcceleratorError(kHere, 2, "CUDA error: out of memory")));
    EXPECT_TRUE(is_out_of_memory(std::bad_alloc()));
    // Another CUDA error, and LibTorch errors that only talk about memory, are not.
    EXPECT_FALSE(is_out_of_memory(c10::AcceleratorError(kHere, 700, "illegal memory access")));
    EXPECT_FALSE(is_out_of_memory(c10::Error(kHere, "expected out of memory format NCHW")));
    EXPECT_FALSE(is_out_of_memory(c10::ValueError(kHere, "can't allocate memory twice")));
    EXPECT_FALSE(is_out_of_memory(std::runtime_error("out of memory")));
}

TEST(OutOfMemory, TheCpuAllocatorsRealFailureIsRecognised) {
    try {
        (void)torch::empty({1LL << 60});  // 4 EiB
        FAIL() << "allocated 4 EiB";
    } catch (const std::exception& e) {
        EXPECT_TRUE(is_out_of_memory(e)) << e.what();
    }
}

}  // namespace
}  // namespace crucible::engine
