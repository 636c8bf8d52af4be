// The ETA of progress events (core/engine/eta.h): averaged over the whole run so far, so a
// validation pause every epoch shows as its share instead of swinging the estimate.
#include "core/engine/eta.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace crucible::engine {
namespace {

using std::chrono::milliseconds;

TEST(Eta, NoEstimateBeforeAStepAndTheFallbackAfterOne) {
    EtaEstimate eta;
    EXPECT_LT(eta.seconds_left(100, 0.5), 0);
    eta.observe(10, EtaEstimate::Clock::time_point{});
    EXPECT_DOUBLE_EQ(eta.seconds_left(100, 0.5), 45.0);  // 90 steps at the fallback's 0.5 s
    EXPECT_LT(eta.seconds_left(100, 0.0), 0);            // nothing to go by
}

TEST(Eta, ValidationPausesDoNotSwingTheEstimate) {
    // 10 epochs of 20 steps at 1 s each, then a 20 s validation: 40 s an epoch in all.
    EtaEstimate eta;
    EtaEstimate::Clock::time_point now{};
    double low = 1e9, high = 0;
    for (int step = 1; step <= 200; ++step) {
        now += milliseconds(1000);
        if (step > 1 && (step - 1) % 20 == 0) now += milliseconds(20000);  // the validation
        eta.observe(step, now);
        if (step >= 60 && step % 5 == 0) {
            // What is left, as a fraction of the truth (40 s an epoch, validations included).
            const double truth = (200 - step) * 2.0;
            if (truth <= 0) continue;
            const double ratio = eta.seconds_left(200, 1.0) / truth;
            low = std::min(low, ratio);
            high = std::max(high, ratio);
        }
    }
    // A window-only estimate would say 1 s a step right after a validation (half the truth)
    // and 21 s a step across one (ten times it); the run's average stays close.
    EXPECT_GT(low, 0.8);
    EXPECT_LT(high, 1.2);
    EXPECT_DOUBLE_EQ(eta.seconds_left(200, 1.0), 0.0);  // done
}

}  // namespace
}  // namespace crucible::engine
