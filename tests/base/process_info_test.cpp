// This process's resident memory (core/base/process_info.h): the figure loaders' memory checks
// and benchmarks read. Pages count once written, and the peak never falls below the present.
// Blocks are sized above the present resident size: memory that earlier tests freed and the C
// library kept (already resident) can then hold only part of them. The peak's restart is shown
// with a mapped file, whose pages leave when it is unmapped whatever the C library's policy
// (allocator_test keeps freed heap memory in this process for good).
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <vector>

#include "core/base/mapped_file.h"
#include "core/base/process_info.h"
#include "tests/support/temp_dir.h"

namespace crucible {
namespace {

constexpr std::int64_t kMiB = 1 << 20;

TEST(ProcessMemory, ResidentBytesGrowWithWrittenPagesAndThePeakFollows) {
    const std::int64_t before = resident_bytes();
    ASSERT_GT(before, 0);
    std::vector<char> block(static_cast<std::size_t>(before + 64 * kMiB), 1);
    const std::int64_t after = resident_bytes();
    EXPECT_GT(after - before, 48 * kMiB) << before << " -> " << after;
    EXPECT_GE(peak_resident_bytes(), after);
    EXPECT_EQ(block[12345], 1);
}

TEST(ProcessMemory, ThePeakStartsOverWhereTheSystemAllowsIt) {
    const auto dir = test_support::scratch_dir("process_memory");
    const auto file = dir / "pages.bin";
    {
        std::ofstream out(file, std::ios::binary);
        const std::vector<char> chunk(kMiB, 7);
        for (int i = 0; i < 96; ++i)
            out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    }
    {
        const MappedFile mapped(file);
        long sum = 0;
        for (std::size_t i = 0; i < mapped.bytes().size(); i += 4096)
            sum += static_cast<long>(mapped.bytes()[i]);  // every page read: resident
        EXPECT_EQ(sum, 7L * 96 * 256);
    }
    const std::int64_t high = peak_resident_bytes();
    if (!reset_peak_resident_bytes())
        GTEST_SKIP() << "this system keeps the peak for the process's life (Windows)";
    EXPECT_LT(peak_resident_bytes(), high - 64 * kMiB);
    EXPECT_LE(peak_resident_bytes(), resident_bytes() + kMiB);
}

}  // namespace
}  // namespace crucible
