// From a PR-curve point back to its images (core/data/pr_operating_point.h), on a hand-made
// report whose curve is worked out below.
#include <gtest/gtest.h>

#include "core/data/pr_operating_point.h"

namespace crucible::data {
namespace {

ScoredBox prediction(int cls, double conf, bool tp) {
    return {{cls, 0.5, 0.5, 0.1, 0.1}, conf, tp};
}

// Class 0 has 4 true boxes over three images. Its predictions, most confident first:
//   0.9 tp (a), 0.8 fp (b), 0.7 tp (a), 0.6 tp (b), 0.3 fp (c)
// so the curve's points are (R, P): 1/4 1/1, 1/4 1/2, 2/4 2/3, 3/4 3/4, 3/4 3/5.
PerImageReport report() {
    PerImageReport r;
    r.names = {"dent", "scratch"};
    ImageOutcome a, b, c;
    a.path = "a.jpg";
    a.truth_classes = {0, 0, 1};
    a.predictions = {prediction(0, 0.9, true), prediction(0, 0.7, true), prediction(1, 0.95, true)};
    b.path = "b.jpg";
    b.truth_classes = {0, 0};
    b.predictions = {prediction(0, 0.8, false), prediction(0, 0.6, true)};
    c.path = "c.jpg";
    c.predictions = {prediction(0, 0.3, false)};
    r.images = {a, b, c};
    return r;
}

TEST(PrOperatingPoint, RecallGivesTheHighestThresholdThatReachesIt) {
    const auto r = report();
    const auto first = operating_point_at_recall(r, 0, 0.0);
    EXPECT_DOUBLE_EQ(first.conf, 0.9);
    EXPECT_EQ(first.counts.true_positives, 1);
    EXPECT_DOUBLE_EQ(first.precision(), 1.0);
    EXPECT_DOUBLE_EQ(first.recall(), 0.25);

    const auto half = operating_point_at_recall(r, 0, 0.5);
    EXPECT_DOUBLE_EQ(half.conf, 0.7);
    EXPECT_EQ(half.instances, 4);
    EXPECT_EQ(half.counts.true_positives, 2);
    EXPECT_EQ(half.counts.false_positives, 1);
    EXPECT_EQ(half.counts.misses, 2);
    EXPECT_DOUBLE_EQ(half.precision(), 2.0 / 3.0);

    // 0.6 of 4 boxes needs 3 true positives: the threshold drops to 0.6.
    const auto more = operating_point_at_recall(r, 0, 0.6);
    EXPECT_DOUBLE_EQ(more.conf, 0.6);
    EXPECT_DOUBLE_EQ(more.recall(), 0.75);
    EXPECT_DOUBLE_EQ(more.precision(), 0.75);

    // Past the highest recall (3 of 4): every prediction, the last false positive included.
    const auto all = operating_point_at_recall(r, 0, 1.0);
    EXPECT_DOUBLE_EQ(all.conf, 0.3);
    EXPECT_EQ(all.counts.false_positives, 2);
    EXPECT_EQ(all.counts.misses, 1);
    EXPECT_DOUBLE_EQ(all.precision(), 0.6);
}

TEST(PrOperatingPoint, EachImageCountsItsOwnPart) {
    const auto r = report();
    const auto at = class_counts(r.images[1], 0, 0.7);
    EXPECT_EQ(at.false_positives, 1);
    EXPECT_EQ(at.true_positives, 0);
    EXPECT_EQ(at.misses, 2);
    EXPECT_EQ(class_counts(r.images[2], 0, 0.7).found(), 0) << "c's only box is below 0.7";
    EXPECT_EQ(class_counts(r.images[0], 1, 0.0).true_positives, 1);
    EXPECT_EQ(class_counts(r.images[0], 1, 0.0).misses, 0);
}

TEST(PrOperatingPoint, AClassWithoutPredictionsStaysAtTheStart) {
    auto r = report();
    r.images[0].truth_classes.push_back(1);
    const auto none = operating_point_at_recall(r, 1, 0.5);
    EXPECT_EQ(none.counts.true_positives, 1) << "class 1 has one prediction, at 0.95";
    r.images[0].predictions.pop_back();
    const auto empty = operating_point_at_recall(r, 1, 0.5);
    EXPECT_DOUBLE_EQ(empty.conf, 1.0);
    EXPECT_EQ(empty.counts.found(), 0);
    EXPECT_EQ(empty.counts.misses, 2);
    EXPECT_DOUBLE_EQ(empty.precision(), 1.0);
    EXPECT_DOUBLE_EQ(empty.recall(), 0.0);
}

}  // namespace
}  // namespace crucible::data
