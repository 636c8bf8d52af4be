// Placing a job on several GPUs (core/jobs/gpu_topology.h): the closest free set, on the kind of
// machines our users have.
#include <gtest/gtest.h>

#include "core/jobs/gpu_topology.h"

namespace crucible::jobs {
namespace {

// An 8-GPU PCIe server: GPUs 0-3 under one switch, 4-7 under another, the switches on two
// sockets; NVLink bridges join 0-1, 2-3, 4-5 and 6-7.
GpuTopology two_switch_server() {
    GpuTopology t;
    for (int a = 0; a < 8; ++a)
        for (int b = a + 1; b < 8; ++b)
            t.cost[{a, b}] = a / 4 == b / 4 ? 10 : 50;
    for (int a = 0; a < 8; a += 2)
        t.cost[{a, a + 1}] = kNvLinkCost;
    return t;
}

TEST(GpuTopology, APairTakesAnNvLinkAndFourStayUnderOneSwitch) {
    const auto t = two_switch_server();
    const std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
    EXPECT_EQ(closest_gpus(all, 2, t), (std::vector<int>{0, 1}));
    EXPECT_EQ(closest_gpus(all, 4, t), (std::vector<int>{0, 1, 2, 3}));
    // 1 and 2 busy: a pair is 4-5 (NVLink), not 0-3 (the same switch only).
    EXPECT_EQ(closest_gpus({0, 3, 4, 5, 6, 7}, 2, t), (std::vector<int>{4, 5}));
    // Four out of 0, 3, 4, 5, 6, 7: the other switch whole, not two and two across sockets.
    EXPECT_EQ(closest_gpus({0, 3, 4, 5, 6, 7}, 4, t), (std::vector<int>{4, 5, 6, 7}));
    // Three: two NVLinked plus one beside them under the switch.
    EXPECT_EQ(closest_gpus({1, 2, 3, 6}, 3, t), (std::vector<int>{1, 2, 3}));
}

TEST(GpuTopology, WithoutATopologyOrEnoughGpus) {
    EXPECT_EQ(closest_gpus({5, 1, 3}, 2, {}), (std::vector<int>{1, 3})) << "the lowest indices";
    EXPECT_TRUE(closest_gpus({1, 3}, 3, two_switch_server()).empty());
    EXPECT_TRUE(closest_gpus({}, 1, {}).empty());
    EXPECT_EQ(closest_gpus({4}, 1, two_switch_server()), std::vector<int>{4});
    GpuTopology partial;  // one measured pair: the others count as far
    partial.cost[{2, 3}] = 10;
    EXPECT_EQ(closest_gpus({0, 1, 2, 3}, 2, partial), (std::vector<int>{2, 3}));
    EXPECT_EQ(partial.between(3, 2), 10);
    EXPECT_EQ(partial.between(0, 1), kUnknownCost);
    EXPECT_EQ(partial.between(1, 1), 0);
}

// Past 20 000 combinations the set grows greedily; on 64 GPUs in 8 NVLink islands of 8 it still
// takes one island whole.
TEST(GpuTopology, ManyGpusTakeOneIsland) {
    GpuTopology t;
    for (int a = 0; a < 64; ++a)
        for (int b = a + 1; b < 64; ++b)
            t.cost[{a, b}] = a / 8 == b / 8 ? kNvLinkCost : 40;
    std::vector<int> free;
    for (int g = 0; g < 64; ++g)
        if (g != 3) free.push_back(g);  // island 0 is one short
    const auto set = closest_gpus(free, 8, t);
    ASSERT_EQ(set.size(), 8u);
    EXPECT_EQ(set, (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
}

}  // namespace
}  // namespace crucible::jobs
