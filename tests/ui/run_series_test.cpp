#include "ui/run_series.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <tuple>

using namespace crucible;
using namespace crucible::ui;

namespace {
Event metric(std::int64_t seq, std::int64_t step, double loss) {
    Event e = make_metric(0, step, {{"train/loss", loss}});
    e.seq = seq;
    e.t = 1000.0 + static_cast<double>(seq);
    return e;
}
}  // namespace

TEST(RunSeries, RollbackRemovesSupersededPointsAndDuplicatesAreIgnored) {
    RunSeries r;
    std::int64_t seq = 0;
    for (int s = 1; s <= 10; ++s)
        r.apply(metric(seq++, s, s));
    Event rb = make_rollback(6);
    rb.seq = seq++;
    r.apply(rb);
    for (int s = 7; s <= 12; ++s)
        r.apply(metric(seq++, s, 100 + s));
    r.apply(metric(3, 3, -1));  // a replayed old event after a reconnect
    const Series* s = r.find("train/loss");
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(s->size(), 12u);
    for (std::size_t i = 0; i < 12; ++i)
        EXPECT_EQ(s->step[i], static_cast<double>(i + 1));
    EXPECT_EQ(s->value[5], 6.0);    // kept from before the rollback
    EXPECT_EQ(s->value[6], 107.0);  // replaced after it
}

TEST(RunSeries, HundredThousandEventsWithRollbacks) {
    RunSeries r;
    std::int64_t seq = 0;
    int rollbacks = 0;
    for (int s = 1; s <= 100000; ++s) {
        r.apply(metric(seq++, s, std::sin(s)));
        if (s % 25000 == 0 && s / 25000 > rollbacks && s < 100000) {
            ++rollbacks;
            Event rb = make_rollback(s - 100);
            rb.seq = seq++;
            r.apply(rb);
            s -= 100;  // the resumed run repeats the last 100 steps
        }
    }
    const Series* s = r.find("train/loss");
    ASSERT_EQ(s->size(), 100000u);
    for (std::size_t i = 1; i < s->size(); ++i)
        ASSERT_EQ(s->step[i], s->step[i - 1] + 1);
}

TEST(Smoothing, EmaMatchesHandComputedDebiasedValues) {
    auto out = ema_smooth({1, 3, 5}, 0.5);
    EXPECT_DOUBLE_EQ(out[0], 1.0);
    EXPECT_DOUBLE_EQ(out[1], (0.25 + 1.5) / 0.75);
    EXPECT_DOUBLE_EQ(out[2], (0.125 + 0.75 + 2.5) / 0.875);
    EXPECT_EQ(ema_smooth({2, 4}, 0.0), (std::vector<double>{2, 4}));
}

TEST(Decimation, KeepsExtremesAndBoundsThePointCount) {
    std::vector<double> x(1'000'000), y(1'000'000);
    for (std::size_t i = 0; i < x.size(); ++i) {
        x[i] = static_cast<double>(i);
        y[i] = std::sin(static_cast<double>(i) * 0.001);
    }
    y[500'000] = 50;  // a spike must survive
    y[700'000] = -50;
    auto pts = decimate_min_max(x, y, 0, 999'999, 1000);
    EXPECT_LE(pts.size(), 4000u);
    bool spike = false, dip = false;
    for (auto& p : pts) {
        spike = spike || p.y == 50;
        dip = dip || p.y == -50;
    }
    EXPECT_TRUE(spike);
    EXPECT_TRUE(dip);
    for (std::size_t i = 1; i < pts.size(); ++i)
        EXPECT_LE(pts[i - 1].x, pts[i].x);
    EXPECT_EQ(pts.front().x, 0);
    EXPECT_EQ(pts.back().x, 999'999);
    // A visible window only: points outside are dropped.
    auto window = decimate_min_max(x, y, 1000, 2000, 1000);
    EXPECT_EQ(window.size(), 1001u);
}

// The block index answers any range like a scan would (earliest index on ties, non-finite
// values never extreme while a finite one exists), also while the series grows.
TEST(Decimation, IndexedExtremesEqualAScan) {
    std::mt19937 rng(42);
    std::uniform_int_distribution<int> level(0, 20);  // few distinct values: many ties
    std::vector<double> y;
    MinMaxIndex index;
    for (int round = 0; round < 4; ++round) {
        const std::size_t grow = round == 0 ? 5 : 7000 + static_cast<std::size_t>(round) * 1234;
        for (std::size_t k = 0; k < grow; ++k)
            y.push_back(k % 997 == 3 ? std::nan("") : static_cast<double>(level(rng)));
        index.extend(y);
        ASSERT_EQ(index.size(), y.size());
        std::uniform_int_distribution<std::size_t> pos(0, y.size() - 1);
        for (int q = 0; q < 300; ++q) {
            std::size_t a = pos(rng), b = pos(rng);
            if (a > b) std::swap(a, b);
            ++b;
            std::size_t lo = a, hi = a;
            for (std::size_t i = a; i < b; ++i) {
                if (std::isfinite(y[i]) && (!std::isfinite(y[lo]) || y[i] < y[lo])) lo = i;
                if (std::isfinite(y[i]) && (!std::isfinite(y[hi]) || y[i] > y[hi])) hi = i;
            }
            const auto e = index.range(y, a, b);
            ASSERT_EQ(e.lo, lo) << "range " << a << ".." << b;
            ASSERT_EQ(e.hi, hi) << "range " << a << ".." << b;
        }
    }
}

TEST(Decimation, IndexedDecimationEqualsTheLinearOne) {
    std::mt19937 rng(7);
    std::normal_distribution<double> noise(0, 1);
    std::vector<double> x, y;
    double step = 0;
    for (int i = 0; i < 300'000; ++i) {
        step += (i % 5 == 0) ? 0 : 1;  // repeated x values, as after a resume
        x.push_back(step);
        y.push_back(i == 123'456 ? 1e6 : noise(rng));
    }
    MinMaxIndex index;
    index.extend(y);
    const std::vector<std::tuple<double, double, int>> views = {
        {x.front(), x.back(), 800},
        {x.front(), x.back(), 1},
        {1000, 2000, 300},
        {5000.5, 190'000.25, 777},
        {x.back() - 100, x.back() + 50, 64}};
    for (const auto& [lo, hi, buckets] : views) {
        const auto linear = decimate_min_max(x, y, lo, hi, buckets);
        const auto indexed = decimate_min_max(x, y, index, lo, hi, buckets);
        ASSERT_EQ(linear.size(), indexed.size()) << lo << ".." << hi << " / " << buckets;
        for (std::size_t i = 0; i < linear.size(); ++i) {
            ASSERT_EQ(linear[i].x, indexed[i].x) << "point " << i;
            ASSERT_EQ(linear[i].y, indexed[i].y) << "point " << i;
        }
    }
}
