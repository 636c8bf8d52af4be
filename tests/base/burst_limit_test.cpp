// The limit on the service's event log entries (core/base/burst_limit.h), on a clock the test
// moves by hand.
#include <gtest/gtest.h>

#include "core/base/burst_limit.h"

using namespace crucible;
using namespace std::chrono_literals;

TEST(BurstLimit, PassesUpToTheLimitThenCountsWhatItHoldsBack) {
    BurstLimit limit(3, 60s);
    const BurstLimit::Clock::time_point t0{1000h};
    for (int i = 0; i < 3; ++i) {
        const auto v = limit.admit(t0 + i * 1s);
        EXPECT_TRUE(v.pass) << i;
        EXPECT_EQ(v.held_back_before, 0) << i;
    }
    for (int i = 0; i < 5; ++i)
        EXPECT_FALSE(limit.admit(t0 + 10s + i * 1s).pass);
    // 59.9 s into the window: still held back.
    EXPECT_FALSE(limit.admit(t0 + 59900ms).pass);
    // The next window: this one passes, and says that six were held back.
    const auto next = limit.admit(t0 + 60s);
    EXPECT_TRUE(next.pass);
    EXPECT_EQ(next.held_back_before, 6);
    // Said once only.
    EXPECT_EQ(limit.admit(t0 + 61s).held_back_before, 0);
}

TEST(BurstLimit, QuietWindowsInBetweenKeepTheCountForTheNextMessage) {
    BurstLimit limit(1, 60s);
    const BurstLimit::Clock::time_point t0{5h};
    EXPECT_TRUE(limit.admit(t0).pass);
    EXPECT_FALSE(limit.admit(t0 + 1s).pass);
    EXPECT_FALSE(limit.admit(t0 + 2s).pass);
    // An hour of silence: the first message then still reports the two.
    const auto later = limit.admit(t0 + 1h);
    EXPECT_TRUE(later.pass);
    EXPECT_EQ(later.held_back_before, 2);
    EXPECT_FALSE(limit.admit(t0 + 1h + 1s).pass);
}
