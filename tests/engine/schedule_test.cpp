// The schedule arithmetic against values computed by hand from the SPECS.md formulas.
#include <gtest/gtest.h>

#include <cmath>

#include "core/base/error.h"
#include "core/engine/schedule.h"

namespace crucible::engine {
namespace {

TEST(Schedule, RoundHalfEvenLikePython) {
    EXPECT_EQ(round_half_even(2.5), 2);
    EXPECT_EQ(round_half_even(3.5), 4);
    EXPECT_EQ(round_half_even(0.5), 0);
    EXPECT_EQ(round_half_even(2.6), 3);
    EXPECT_EQ(round_half_even(-1.5), -2);
}

TEST(Schedule, AccumulateFollowsNbsRule) {
    EXPECT_EQ(accumulate_steps(64, 16), 4);
    EXPECT_EQ(accumulate_steps(64, 24), 3);   // 2.67
    EXPECT_EQ(accumulate_steps(64, 40), 2);   // 1.6
    EXPECT_EQ(accumulate_steps(64, 48), 1);   // 1.33
    EXPECT_EQ(accumulate_steps(64, 128), 1);  // round(0.5) = 0 -> at least 1
    EXPECT_EQ(accumulate_steps(10, 4), 2);    // 2.5 rounds to even
    EXPECT_THROW(accumulate_steps(64, 0), InputError);
}

TEST(Schedule, WeightDecayScaledByBatchTimesAccumulate) {
    EXPECT_DOUBLE_EQ(scaled_weight_decay(5e-4, 16, 4, 64), 5e-4);
    EXPECT_DOUBLE_EQ(scaled_weight_decay(5e-4, 24, 3, 64), 5e-4 * 72 / 64);
}

TEST(Schedule, WarmupIterations) {
    EXPECT_EQ(warmup_iterations(3, 16), 100);  // 48 -> at least 100
    EXPECT_EQ(warmup_iterations(3, 500), 1500);
    EXPECT_EQ(warmup_iterations(2.5, 41), 102);  // 102.5 rounds to even
    EXPECT_EQ(warmup_iterations(0, 500), -1);
}

TEST(Schedule, LinearAndCosineFactors) {
    EXPECT_DOUBLE_EQ(lr_factor(0, 100, 0.01, false), 1.0);
    EXPECT_DOUBLE_EQ(lr_factor(50, 100, 0.01, false), 0.505);
    EXPECT_NEAR(lr_factor(100, 100, 0.01, false), 0.01, 1e-15);
    EXPECT_NEAR(lr_factor(0, 100, 0.01, true), 1.0, 1e-15);
    EXPECT_NEAR(lr_factor(50, 100, 0.01, true), 0.505, 1e-12);
    EXPECT_NEAR(lr_factor(25, 100, 0.01, true), 1 - 0.99 * (1 - std::sqrt(0.5)) / 2, 1e-12);
    EXPECT_NEAR(lr_factor(100, 100, 0.01, true), 0.01, 1e-12);
}

ScheduleConfig sgd_config() {
    ScheduleConfig c;
    c.epochs = 10;
    c.batch = 16;
    c.nbs = 64;
    c.lrf = 0.01;
    c.momentum = 0.937;
    c.warmup_momentum = 0.8;
    c.warmup_bias_lr = 0.1;
    c.warmup_iters = 100;
    c.groups = {{0.01, Warmup::Bias}, {0.01, Warmup::Ramp}, {0.01, Warmup::Ramp}};
    c.has_momentum = true;
    return c;
}

TEST(Schedule, WarmupStart) {
    const auto v = schedule_at(sgd_config(), 0, 0);
    EXPECT_EQ(v.accumulate, 1);
    EXPECT_DOUBLE_EQ(v.lr[0], 0.1);  // bias LR starts at warmup_bias_lr
    EXPECT_DOUBLE_EQ(v.lr[1], 0.0);  // the others from 0
    EXPECT_DOUBLE_EQ(v.lr[2], 0.0);
    EXPECT_DOUBLE_EQ(v.momentum, 0.8);
}

TEST(Schedule, WarmupMiddle) {
    auto v = schedule_at(sgd_config(), 50, 0);
    EXPECT_EQ(v.accumulate, 2);  // interp 2.5 -> 2 (half to even)
    EXPECT_NEAR(v.lr[0], 0.055, 1e-15);
    EXPECT_NEAR(v.lr[1], 0.005, 1e-15);
    EXPECT_NEAR(v.momentum, 0.8685, 1e-15);
    v = schedule_at(sgd_config(), 75, 0);
    EXPECT_EQ(v.accumulate, 3);  // 3.25
    // In epoch 1 the target is initial_lr * lf(1) = 0.01 * 0.901.
    v = schedule_at(sgd_config(), 50, 1);
    EXPECT_NEAR(v.lr[1], 0.5 * 0.00901, 1e-15);
    EXPECT_NEAR(v.lr[0], 0.1 + 0.5 * (0.00901 - 0.1), 1e-15);
}

TEST(Schedule, AfterWarmup) {
    auto v = schedule_at(sgd_config(), 100, 0);
    EXPECT_EQ(v.accumulate, 4);
    EXPECT_NEAR(v.lr[0], 0.01, 1e-15);
    v = schedule_at(sgd_config(), 150, 3);
    EXPECT_EQ(v.accumulate, 4);
    for (double lr : v.lr)
        EXPECT_NEAR(lr, 0.01 * 0.703, 1e-15);
    EXPECT_DOUBLE_EQ(v.momentum, 0.937);
}

TEST(Schedule, AnyNumberOfGroupsEachWithItsRateAndWarmup) {
    auto c = sgd_config();
    c.groups = {
        {0.02, Warmup::Ramp}, {0.005, Warmup::Bias}, {0.01, Warmup::Ramp}, {0.04, Warmup::Ramp}};
    auto v = schedule_at(c, 50, 0);  // half-way through the warm-up
    ASSERT_EQ(v.lr.size(), 4u);
    EXPECT_NEAR(v.lr[0], 0.01, 1e-15);
    EXPECT_NEAR(v.lr[1], 0.1 + 0.5 * (0.005 - 0.1), 1e-15);
    EXPECT_NEAR(v.lr[3], 0.02, 1e-15);
    v = schedule_at(c, 150, 3);
    EXPECT_NEAR(v.lr[1], 0.005 * 0.703, 1e-15);
    EXPECT_NEAR(v.lr[3], 0.04 * 0.703, 1e-15);
    c.groups.clear();
    EXPECT_TRUE(schedule_at(c, 10, 0).lr.empty());
}

TEST(Schedule, AdamMomentumNotRamped) {
    auto c = sgd_config();
    c.has_momentum = false;
    c.momentum = 0.9;
    EXPECT_DOUBLE_EQ(schedule_at(c, 10, 0).momentum, 0.9);
}

TEST(Schedule, AutoOptimizerShortRunPicksAdamW) {
    // 256 images, batch 16, nbs 64: ceil(256/64) * 40 = 160 iterations <= 10,000.
    auto c = choose_optimizer("auto", 256, 16, 64, 40, 4, 0.01, 0.937, 0.1);
    EXPECT_EQ(c.name, "AdamW");
    EXPECT_DOUBLE_EQ(c.lr, 0.00125);  // round(0.002 * 5 / 8, 6)
    EXPECT_DOUBLE_EQ(c.momentum, 0.9);
    EXPECT_DOUBLE_EQ(c.warmup_bias_lr, 0.0);
    c = choose_optimizer("auto", 256, 16, 64, 40, 80, 0.01, 0.937, 0.1);
    EXPECT_DOUBLE_EQ(c.lr, 0.000119);  // 0.0001190476... rounded to 6 places
    // Exactly 10,000 iterations is still AdamW; one epoch more is SGD.
    EXPECT_EQ(choose_optimizer("auto", 64000, 16, 64, 10, 4, 0.01, 0.937, 0.1).name, "AdamW");
    c = choose_optimizer("auto", 64000, 16, 64, 11, 4, 0.01, 0.937, 0.1);
    EXPECT_EQ(c.name, "SGD");
    EXPECT_DOUBLE_EQ(c.lr, 0.01);
    EXPECT_DOUBLE_EQ(c.momentum, 0.9);
    EXPECT_DOUBLE_EQ(c.warmup_bias_lr, 0.1);
}

TEST(Schedule, ExplicitOptimizerKeepsArguments) {
    const auto c = choose_optimizer("SGD", 256, 16, 64, 40, 4, 0.02, 0.95, 0.05);
    EXPECT_EQ(c.name, "SGD");
    EXPECT_DOUBLE_EQ(c.lr, 0.02);
    EXPECT_DOUBLE_EQ(c.momentum, 0.95);
    EXPECT_DOUBLE_EQ(c.warmup_bias_lr, 0.05);
    EXPECT_THROW(choose_optimizer("RMSprop", 1, 1, 1, 1, 1, 0.01, 0.9, 0.1), InputError);
}

}  // namespace
}  // namespace crucible::engine
