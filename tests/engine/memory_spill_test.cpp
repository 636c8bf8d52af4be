// The Windows memory-spill alarm, by simulation: report windows of a run whose memory grows past
// the card, and of one whose steps collapse near the limit, and of healthy runs that must stay
// quiet.
#include "core/engine/memory_spill.h"

#include <gtest/gtest.h>

namespace crucible::engine {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

MemoryWindow window(double reserved_gib, double seconds, double card_gib = 24) {
    return {static_cast<std::uint64_t>(reserved_gib * 0.9 * kGiB),
            static_cast<std::uint64_t>(reserved_gib * kGiB),
            static_cast<std::uint64_t>(card_gib * kGiB), seconds};
}

TEST(MemorySpill, ReservedPastTheCardRaisesOncePerEpisode) {
    MemorySpillWatch watch;
    EXPECT_FALSE(watch.observe(window(20, 0.5)));
    const auto alarm = watch.observe(window(25, 0.6));
    ASSERT_TRUE(alarm);
    EXPECT_EQ(alarm->alarm, "gpu_memory_spill");
    EXPECT_NE(alarm->message.find("reserved 25.0 GiB, allocated 22.5 GiB, card 24.0 GiB"),
              std::string::npos)
        << alarm->message;
    EXPECT_FALSE(watch.observe(window(26, 0.6)));   // the same episode
    EXPECT_FALSE(watch.observe(window(20, 0.5)));   // cleared
    EXPECT_TRUE(watch.observe(window(24.5, 0.5)));  // a new one
}

TEST(MemorySpill, StepTimeCollapseNearTheLimitRaises) {
    MemorySpillWatch watch;
    for (double s : {0.52, 0.50, 0.51})
        EXPECT_FALSE(watch.observe(window(22.5, s)));
    // Memory near full (94 %) and steps 30x slower: the driver is paging.
    const auto alarm = watch.observe(window(22.6, 15.0));
    ASSERT_TRUE(alarm);
    EXPECT_EQ(alarm->alarm, "gpu_memory_slowdown");
    EXPECT_NE(alarm->message.find("steps became 30x slower"), std::string::npos) << alarm->message;
    EXPECT_FALSE(watch.observe(window(22.6, 14.0)));
}

TEST(MemorySpill, HealthyRunsStayQuiet) {
    MemorySpillWatch watch;
    // Slow steps with plenty of memory free (validation, a slow disk) are not a spill.
    for (double s : {0.5, 0.5, 9.0, 0.5})
        EXPECT_FALSE(watch.observe(window(10, s)));
    // Full memory at a steady speed is not one either.
    MemorySpillWatch full;
    for (int i = 0; i < 5; ++i)
        EXPECT_FALSE(full.observe(window(23.8, 0.5)));
    // Without a GPU (no dedicated memory) nothing is watched.
    EXPECT_FALSE(MemorySpillWatch().observe({0, 0, 0, 1.0}));
}

}  // namespace
}  // namespace crucible::engine
