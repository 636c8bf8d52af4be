// at::parallel_for in our own code must spread its range over LibTorch's threads. It is a header
// template that only goes parallel where the including code is compiled with OpenMP (LibTorch's
// backend); without the flag it silently runs everything on the caller, as the fused batch norm
// + SiLU did until the LibTorch targets took OpenMP (installer/cmake/CrucibleTorch.cmake).
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <vector>

namespace {

// Restores LibTorch's intra-op thread count when a test ends.
struct ThreadCountGuard {
    int before = at::get_num_threads();
    ~ThreadCountGuard() { at::set_num_threads(before); }
};

TEST(ParallelFor, OurCodeSplitsTheRangeOverLibTorchsThreads) {
    ThreadCountGuard guard;
    at::set_num_threads(2);
    ASSERT_EQ(at::get_num_threads(), 2);

    constexpr std::int64_t kItems = 10000;
    std::vector<int> visits(kItems, 0);
    std::set<int> threads;
    std::mutex mutex;
    at::parallel_for(0, kItems, 100, [&](std::int64_t begin, std::int64_t end) {
        {
            const std::lock_guard<std::mutex> lock(mutex);
            threads.insert(at::get_thread_num());
        }
        for (std::int64_t i = begin; i < end; ++i)
            ++visits[static_cast<std::size_t>(i)];
    });
    EXPECT_EQ(threads.size(), 2u) << "at::parallel_for ran on one thread: is this code compiled "
                                     "with LibTorch's OpenMP flag?";
    for (std::int64_t i = 0; i < kItems; ++i)
        ASSERT_EQ(visits[static_cast<std::size_t>(i)], 1) << "item " << i;
}

TEST(ParallelFor, ARangeBelowTheGrainStaysOnTheCaller) {
    ThreadCountGuard guard;
    at::set_num_threads(2);
    std::set<int> threads;
    std::mutex mutex;
    at::parallel_for(0, 50, 100, [&](std::int64_t, std::int64_t) {
        const std::lock_guard<std::mutex> lock(mutex);
        threads.insert(at::get_thread_num());
    });
    EXPECT_EQ(threads, std::set<int>{0});
}

}  // namespace
