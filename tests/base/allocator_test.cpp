// POSIX-only test: measures memory with getrusage.
// keep_freed_memory_for_reuse: the buffers of one training step, freed at its end, are reused by
// the next step without page faults (glibc only; elsewhere the call reports that it did nothing).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <vector>

#include "core/base/allocator.h"

#if defined(__GLIBC__)
#include <sys/resource.h>
#endif

namespace {

#if defined(__GLIBC__)
long minor_page_faults() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
}

// Activation-like buffers of several sizes, each page written, then all freed, as a forward +
// backward does: up to 24 MiB as at 320 px, and one of 100 MiB as the first layers' maps at
// 640 px (16 x 16 x 320 x 320 floats), above the largest mmap threshold glibc accepts (32 MiB).
long step_like_cycle() {
    std::vector<void*> live;
    long sum = 0;
    for (std::size_t mib : {24, 6, 100, 12, 3, 24}) {
        const std::size_t bytes = mib << 20;
        void* block = std::malloc(bytes);
        if (!block) return -1;
        live.push_back(block);
        // Through a volatile pointer: every page is touched, and the compiler cannot drop it.
        volatile unsigned char* p = static_cast<unsigned char*>(block);
        for (std::size_t i = 0; i < bytes; i += 4096)
            p[i] = 1;
        sum += p[bytes - 4096];
    }
    for (void* block : live)
        std::free(block);
    return sum;
}

TEST(Allocator, FreedStepBuffersAreReusedWithoutPageFaults) {
    ASSERT_TRUE(crucible::keep_freed_memory_for_reuse());
    EXPECT_TRUE(crucible::keep_freed_memory_for_reuse());  // once; still reported
    long warm = 0;
    for (int step = 0; step < 10; ++step)  // the first steps map the memory
        warm += step_like_cycle();
    EXPECT_EQ(warm, 60);
    const long before = minor_page_faults();
    long sum = 0;
    for (int step = 0; step < 5; ++step)
        sum += step_like_cycle();
    const long faults = minor_page_faults() - before;
    EXPECT_EQ(sum, 30);
    // Measured over these 5 cycles (with LibTorch tensors of the same sizes): 216,350 faults with
    // glibc's defaults (the buffers went back); 128,005 with a 32 MiB mmap threshold instead of
    // no mapping (the 100 MiB buffer, 25,600 pages a cycle).
    EXPECT_LT(faults, 1000) << "freed buffers went back to the system and were faulted in again";
}
#else
TEST(Allocator, ReportsNothingChangedWithoutGlibc) {
    EXPECT_FALSE(crucible::keep_freed_memory_for_reuse());
}
#endif

}  // namespace
