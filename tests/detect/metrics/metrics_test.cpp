// Hand-computed cases for the matching rules and the AP/P/R computation (SPECS.md "mAP as
// Ultralytics computes it"), the confusion matrix and the per-tag breakdown.
#include <gtest/gtest.h>

#include <cmath>

#include "plugins/detect/metrics/detection_metrics.h"
#include "plugins/detect/metrics/metrics_report.h"

namespace crucible::detect {
namespace {

GtBox gt(int cls, double x1, double y1, double x2, double y2) {
    return {cls, x1, y1, x2, y2};
}
PredBox pred(int cls, double x1, double y1, double x2, double y2, float conf) {
    return {x1, y1, x2, y2, conf, cls};
}

// Bits for thresholds [from, to] (indices into 0.50:0.05:0.95).
std::uint16_t bits(int from, int to) {
    std::uint16_t m = 0;
    for (int t = from; t <= to; ++t)
        m = static_cast<std::uint16_t>(m | (1u << t));
    return m;
}

// ---- numeric building blocks ----------------------------------------------------------------

TEST(Numerics, LinspaceEndsExactly) {
    const auto x = linspace(0, 1, 101);
    ASSERT_EQ(x.size(), 101u);
    EXPECT_EQ(x[0], 0.0);
    EXPECT_EQ(x[100], 1.0);
    EXPECT_EQ(x[37], 37 * 0.01);
    const auto& t = iou_thresholds();
    EXPECT_DOUBLE_EQ(t[0], 0.5);
    EXPECT_DOUBLE_EQ(t[3], 0.65);
    EXPECT_EQ(t[9], 0.95);
}

TEST(Numerics, InterpFollowsNumpyRules) {
    const std::vector<double> xp = {0, 0.5, 0.5, 1};
    const std::vector<double> fp = {1, 0.9, 0.4, 0};
    EXPECT_DOUBLE_EQ(interp(0.5, xp, fp, 7, 3), 0.4);    // last of equal xp
    EXPECT_DOUBLE_EQ(interp(0.25, xp, fp, 7, 3), 0.95);  // between 0 and the first 0.5
    EXPECT_DOUBLE_EQ(interp(0.75, xp, fp, 7, 3), 0.2);   // from the last 0.5
    EXPECT_DOUBLE_EQ(interp(1.0, xp, fp, 7, 3), 0.0);
    EXPECT_DOUBLE_EQ(interp(-0.1, xp, fp, 7, 3), 7.0);
    EXPECT_DOUBLE_EQ(interp(1.1, xp, fp, 7, 3), 3.0);
}

TEST(Numerics, SmoothIsA101WideBoxFilterOn1000Points) {
    std::vector<double> y(1000, 0.0);
    for (std::size_t i = 500; i < 1000; ++i)
        y[i] = 1.0;  // a step at 500
    const auto s = smooth(y, 0.1);
    ASSERT_EQ(s.size(), 1000u);
    EXPECT_NEAR(s[0], 0.0, 1e-15);
    EXPECT_NEAR(s[449], 0.0, 1e-15);        // window 399..499: all zero
    EXPECT_NEAR(s[450], 1.0 / 101, 1e-15);  // window 400..500: one 1
    EXPECT_NEAR(s[500], 51.0 / 101, 1e-12);
    EXPECT_NEAR(s[550], 1.0, 1e-12);
    EXPECT_NEAR(s[999], 1.0, 1e-12);  // right edge padded with the last value
}

TEST(Numerics, AveragePrecisionByHand) {
    // recall [0.5, 1], precision [1, 0.5]: envelope 1 up to recall 0.5, then the line down to 0.5
    // at recall 1, and the padding point (1, 0): 0.5 + (1 + 0.51)/2·0.49 + 0.51/2·0.01.
    EXPECT_NEAR(average_precision({0.5, 1.0}, {1.0, 0.5}), 0.5 + 1.51 / 2 * 0.49 + 0.51 / 2 * 0.01,
                1e-12);
    // A perfect curve gives 0.995, not 1: the envelope ends at the padding point (1, 0), so the
    // last of the 100 trapezoids counts half (this is the reference's well-known ceiling).
    EXPECT_NEAR(average_precision({0.5, 1.0}, {1.0, 1.0}), 0.995, 1e-12);
    // No true positive at all: the envelope is 1 only at recall 0.
    EXPECT_NEAR(average_precision({0.0, 0.0}, {0.0, 0.0}), 0.0, 1e-15);
}

// ---- per-image matching -----------------------------------------------------------------------

TEST(Matching, IouDecidesWhichThresholdsAreMet) {
    // IoU 0.72: true positive at 0.50 ... 0.70, not above.
    const auto tp = match_predictions({gt(0, 0, 0, 100, 100)}, {pred(0, 0, 0, 100, 72, 0.9f)});
    EXPECT_EQ(tp[0], bits(0, 4));
}

TEST(Matching, ClassesMustAgree) {
    const auto tp = match_predictions({gt(0, 0, 0, 100, 100)}, {pred(1, 0, 0, 100, 100, 0.9f)});
    EXPECT_EQ(tp[0], 0);
}

TEST(Matching, DuplicateDetectionIsAFalsePositive) {
    const auto tp = match_predictions(
        {gt(0, 0, 0, 100, 100)}, {pred(0, 0, 0, 100, 100, 0.9f), pred(0, 1, 1, 100, 100, 0.8f)});
    EXPECT_EQ(tp[0], bits(0, 9));
    EXPECT_EQ(tp[1], 0);
}

TEST(Matching, MostConfidentPredictionKeepsTheGtEvenWithLowerIou) {
    // p0 (more confident) IoU 0.62, p1 IoU 0.92 with the same GT. At 0.50..0.60 both are
    // candidates and the GT keeps p0; from 0.65 only p1 is, up to 0.90.
    const auto tp = match_predictions({gt(0, 0, 0, 100, 100)},
                                      {pred(0, 0, 0, 100, 62, 0.9f), pred(0, 0, 0, 100, 92, 0.8f)});
    EXPECT_EQ(tp[0], bits(0, 2));
    EXPECT_EQ(tp[1], bits(3, 8));
}

TEST(Matching, PredictionDoesNotFallBackToItsSecondBestGt) {
    // Two overlapping GTs h0, h1. q0 is h0 itself; q1 overlaps h0 (0.5625) better than h1 (0.515).
    // Each prediction keeps only its best GT, h0 keeps q0, so q1 is a false positive although h1
    // is free (a score-greedy matcher such as pycocotools would give q1 to h1).
    const GtBox h0 = gt(0, 0, 0, 100, 100);
    const GtBox h1 = gt(0, 60, 0, 160, 100);
    const PredBox q0 = pred(0, 0, 0, 100, 100, 0.9f);   // g0 IoU 1
    const PredBox q1 = pred(0, 28, 0, 128, 100, 0.8f);  // g0 72/128 = 0.5625, g1 68/132 = 0.515
    ASSERT_GT(box_iou(h0, q1), box_iou(h1, q1));
    ASSERT_GE(box_iou(h1, q1), 0.5);
    const auto tp = match_predictions({h0, h1}, {q0, q1});
    EXPECT_EQ(tp[0], bits(0, 9));
    EXPECT_EQ(tp[1], 0);
    // Without q0, q1 matches g0 (its best) at 0.50 and 0.55.
    const auto alone = match_predictions({h0, h1}, {q1});
    EXPECT_EQ(alone[0], bits(0, 1));
}

TEST(Matching, IdenticalGtsBothPredictionsPickTheSameGt) {
    // A prediction with equal IoU to two GTs keeps one of them (the later); so does the next
    // prediction, which is then a false positive: 1 TP + 1 FP, as in the reference.
    const auto tp =
        match_predictions({gt(0, 0, 0, 100, 100), gt(0, 0, 0, 100, 100)},
                          {pred(0, 0, 0, 100, 100, 0.9f), pred(0, 0, 0, 100, 100, 0.8f)});
    EXPECT_EQ(tp[0], bits(0, 9));
    EXPECT_EQ(tp[1], 0);
}

TEST(Matching, EmptyInputs) {
    EXPECT_TRUE(match_predictions({gt(0, 0, 0, 1, 1)}, {}).empty());
    const auto tp = match_predictions({}, {pred(0, 0, 0, 1, 1, 0.5f)});
    ASSERT_EQ(tp.size(), 1u);
    EXPECT_EQ(tp[0], 0);
}

// ---- dataset-wide metrics ---------------------------------------------------------------------

// One object per image at a different place; `hit` images get an exact prediction.
DetectionStats one_object_images(int n, int hits, int cls = 0) {
    DetectionStats s;
    for (int i = 0; i < n; ++i) {
        const double x = 10.0 * i;
        std::vector<PredBox> p;
        if (i < hits)
            p.push_back(pred(cls, x, 0, x + 50, 50, 0.9f - 0.01f * static_cast<float>(i)));
        s.add_image({gt(cls, x, 0, x + 50, 50)}, p);
    }
    return s;
}

TEST(Metrics, PerfectPredictorScoresTheReferenceCeiling) {
    const auto m = one_object_images(4, 4).compute();
    ASSERT_EQ(m.classes.size(), 1u);
    EXPECT_NEAR(m.map50, 0.995, 1e-12);
    EXPECT_NEAR(m.map50_95, 0.995, 1e-12);
    EXPECT_NEAR(m.precision, 1.0, 1e-12);
    EXPECT_NEAR(m.recall, 1.0, 1e-12);
    EXPECT_NEAR(m.fitness, 0.995, 1e-12);
    EXPECT_EQ(m.images, 4);
    EXPECT_EQ(m.instances, 4);
    EXPECT_EQ(m.classes[0].images, 4);
}

TEST(Metrics, ClassWithGtAndNoPredictionsHasApZeroAndCounts) {
    DetectionStats s = one_object_images(2, 2, 0);
    s.add_image({gt(1, 0, 0, 30, 30)}, {});  // class 1: GT, never predicted
    const auto m = s.compute();
    ASSERT_EQ(m.classes.size(), 2u);
    EXPECT_EQ(m.classes[1].cls, 1);
    EXPECT_EQ(m.classes[1].map50, 0.0);
    EXPECT_EQ(m.classes[1].map50_95, 0.0);
    EXPECT_EQ(m.classes[1].p, 0.0);
    EXPECT_EQ(m.classes[1].r, 0.0);
    EXPECT_NEAR(m.map50, (0.995 + 0.0) / 2, 1e-12);
    EXPECT_NEAR(m.precision, 0.5, 1e-12);
}

TEST(Metrics, PredictionsOfAClassWithoutGtAreIgnored) {
    const auto base = one_object_images(3, 3).compute();
    DetectionStats s;
    for (int i = 0; i < 3; ++i) {
        const double x = 10.0 * i;
        s.add_image({gt(0, x, 0, x + 50, 50)},
                    {pred(0, x, 0, x + 50, 50, 0.9f - 0.01f * static_cast<float>(i)),
                     pred(7, 200, 200, 260, 260, 0.95f)});  // class 7 has no GT
    }
    const auto m = s.compute();
    ASSERT_EQ(m.classes.size(), 1u);
    EXPECT_EQ(m.classes[0].cls, 0);
    EXPECT_EQ(m.map50, base.map50);
    EXPECT_EQ(m.map50_95, base.map50_95);
    EXPECT_EQ(m.precision, base.precision);
    EXPECT_EQ(m.recall, base.recall);
}

TEST(Metrics, DuplicateDetectionLowersApByHand) {
    // Image A: GT a, predictions 0.9 (TP) and a duplicate 0.8 (FP); image B: GT b, prediction
    // 0.7 (TP). In confidence order TP, FP, TP: recall 0.5, 0.5, 1; precision 1, 0.5, 2/3.
    // Envelope 1 on [0, 0.5), 2/3 on [0.5, 1), 0 at 1 (padding):
    // AP = 0.49 + (1 + 2/3)/2·0.01 + 49·(2/3)·0.01 + (2/3)/2·0.01.
    DetectionStats s;
    s.add_image({gt(0, 0, 0, 50, 50)}, {pred(0, 0, 0, 50, 50, 0.9f), pred(0, 0, 0, 50, 50, 0.8f)});
    s.add_image({gt(0, 0, 0, 50, 50)}, {pred(0, 0, 0, 50, 50, 0.7f)});
    const auto m = s.compute();
    const double expected =
        0.49 + (1 + 2.0 / 3) / 2 * 0.01 + 49 * (2.0 / 3) * 0.01 + (2.0 / 3) / 2 * 0.01;
    EXPECT_NEAR(m.classes[0].map50, expected, 1e-12);
    EXPECT_NEAR(m.map50_95, expected, 1e-12);  // IoU 1: the same at every threshold
    // Without the duplicate the same images score the ceiling.
    DetectionStats clean;
    clean.add_image({gt(0, 0, 0, 50, 50)}, {pred(0, 0, 0, 50, 50, 0.9f)});
    clean.add_image({gt(0, 0, 0, 50, 50)}, {pred(0, 0, 0, 50, 50, 0.7f)});
    EXPECT_NEAR(clean.compute().map50, 0.995, 1e-12);
}

TEST(Metrics, PrecisionAndRecallAtBestF1ByHand) {
    // Four images, one GT each; predictions 0.9 TP, 0.8 TP, 0.3 FP (a wrong place), and one GT
    // missed: recall 1/4, 1/2, 1/2 and precision 1, 1, 2/3 in confidence order. On the
    // confidence grid, between 0.3 and 0.8 R = 1/2 and P falls linearly from 1 to 2/3; above 0.8
    // R falls quickly to 1/4 at 0.9. The smoothed F1 peaks a little below 0.8, where P and R
    // are read.
    DetectionStats s;
    s.add_image({gt(0, 0, 0, 50, 50)}, {pred(0, 0, 0, 50, 50, 0.9f)});
    s.add_image({gt(0, 0, 0, 50, 50)}, {pred(0, 0, 0, 50, 50, 0.8f)});
    s.add_image({gt(0, 0, 0, 50, 50)}, {pred(0, 100, 100, 150, 150, 0.3f)});
    s.add_image({gt(0, 0, 0, 50, 50)}, {});
    const auto m = s.compute();
    const double hi = 0.8f, lo = 0.3f, c = m.best_confidence;
    ASSERT_GT(c, lo);
    ASSERT_LE(c, hi);
    EXPECT_GT(c, 0.7);
    EXPECT_NEAR(m.recall, 0.5, 1e-12);
    EXPECT_NEAR(m.precision, 1 + (hi - c) / (hi - lo) * (2.0 / 3 - 1), 1e-12);
    // The PR curve at IoU 0.5 holds the precision envelope over recall.
    ASSERT_EQ(m.curves.precision_at_recall.size(), 1u);
    EXPECT_NEAR(m.curves.precision_at_recall[0][0], 1.0, 1e-12);
    EXPECT_NEAR(m.curves.precision_at_recall[0][999], 0.0, 1e-12);
    EXPECT_EQ(m.classes[0].predictions, 3);
}

TEST(Metrics, NoGroundTruthGivesZeros) {
    DetectionStats s;
    s.add_image({}, {pred(0, 0, 0, 10, 10, 0.5f)});
    const auto m = s.compute();
    EXPECT_TRUE(m.classes.empty());
    EXPECT_EQ(m.map50, 0.0);
    EXPECT_EQ(m.precision, 0.0);
    EXPECT_EQ(m.fitness, 0.0);
}

TEST(Metrics, PredictionOrderWithinAnImageDoesNotMatter) {
    DetectionStats a, b;
    const std::vector<GtBox> g = {gt(0, 0, 0, 100, 100)};
    a.add_image(g, {pred(0, 0, 0, 100, 62, 0.9f), pred(0, 0, 0, 100, 92, 0.8f)});
    b.add_image(g, {pred(0, 0, 0, 100, 92, 0.8f), pred(0, 0, 0, 100, 62, 0.9f)});
    EXPECT_EQ(a.compute().map50_95, b.compute().map50_95);
}

// ---- per-tag breakdown -------------------------------------------------------------------------

TEST(Metrics, BreakdownByTag) {
    DetectionStats s;
    for (int i = 0; i < 4; ++i) {
        const double x = 10.0 * i;
        const bool station1 = i < 2;
        std::vector<PredBox> p;
        if (station1) p.push_back(pred(0, x, 0, x + 50, 50, 0.9f));  // station 1: all found
        s.add_image({gt(0, x, 0, x + 50, 50)}, p, {{"station", station1 ? "1" : "2"}});
    }
    s.add_image({gt(0, 0, 0, 50, 50)}, {pred(0, 0, 0, 50, 50, 0.5f)}, {});  // untagged
    const auto by = s.compute_by_tag("station");
    ASSERT_EQ(by.size(), 2u);
    EXPECT_EQ(by.at("1").images, 2);
    EXPECT_NEAR(by.at("1").map50, 0.995, 1e-12);
    EXPECT_EQ(by.at("2").images, 2);
    EXPECT_EQ(by.at("2").map50, 0.0);
    const auto all = s.compute();
    EXPECT_EQ(all.images, 5);
    EXPECT_GT(all.map50, 0.0);
    EXPECT_LT(all.map50, 0.995);
    const auto with_missing = s.compute_by_tag("station", "(none)");
    ASSERT_EQ(with_missing.size(), 3u);
    EXPECT_EQ(with_missing.at("(none)").images, 1);
    EXPECT_TRUE(s.compute_by_tag("camera").empty());
}

// ---- confusion matrix -------------------------------------------------------------------------

TEST(Confusion, SmallCaseByHand) {
    ConfusionMatrix cm(2);  // conf 0.25, IoU 0.45
    const GtBox a = gt(0, 0, 0, 50, 50), b = gt(1, 100, 0, 150, 50), c = gt(1, 200, 0, 250, 50);
    cm.add_image({a, b, c}, {
                                pred(0, 0, 0, 50, 50, 0.9f),        // a, right class
                                pred(0, 100, 0, 150, 50, 0.8f),     // b, wrong class
                                pred(1, 300, 300, 350, 350, 0.7f),  // nothing there
                                pred(1, 200, 0, 250, 50, 0.2f),     // c, but below conf 0.25
                            });
    cm.add_image({}, {pred(0, 0, 0, 10, 10, 0.5f)});  // background image, one detection
    cm.add_image({gt(0, 0, 0, 10, 10)}, {});          // missed object
    EXPECT_EQ(cm.at(0, 0), 1);
    EXPECT_EQ(cm.at(0, 1), 1);
    EXPECT_EQ(cm.at(2, 1), 1);  // c missed: background row
    EXPECT_EQ(cm.at(1, 2), 1);  // detection on nothing: background column
    EXPECT_EQ(cm.at(0, 2), 1);  // detection on the background image
    EXPECT_EQ(cm.at(2, 0), 1);  // missed object of class 0
    std::int64_t total = 0;
    for (auto v : cm.counts())
        total += v;
    EXPECT_EQ(total, 6);
}

TEST(Confusion, EachGtAndPredictionCountOnce) {
    ConfusionMatrix cm(1);
    // Two detections on one object: the better-overlapping one matches, the other is background.
    cm.add_image({gt(0, 0, 0, 100, 100)},
                 {pred(0, 0, 0, 100, 100, 0.9f), pred(0, 0, 0, 100, 80, 0.95f)});
    EXPECT_EQ(cm.at(0, 0), 1);
    EXPECT_EQ(cm.at(0, 1), 1);
    EXPECT_EQ(cm.at(1, 0), 0);
}

// ---- report ------------------------------------------------------------------------------------

TEST(Report, JsonUsesResultsCsvNamesAndPerClassRows) {
    DetectionStats s = one_object_images(2, 2, 0);
    s.add_image({gt(1, 0, 0, 30, 30)}, {});
    const auto m = s.compute();
    const Json j = metrics_json(m, {"cat", "dog"});
    for (const char* key : {"metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)",
                            "metrics/mAP50-95(B)", "fitness"})
        EXPECT_TRUE(j.contains(key)) << key;
    ASSERT_EQ(j.at("per_class").size(), 2u);
    const auto& row = j.at("per_class")[1];
    EXPECT_EQ(row.at("name"), "dog");
    EXPECT_EQ(row.at("images"), 1);
    EXPECT_EQ(row.at("instances"), 1);
    for (const char* key : {"class", "p", "r", "map50", "map50_95"})
        EXPECT_TRUE(row.contains(key));
    const std::string table = results_table(m, {"cat", "dog"});
    EXPECT_NE(table.find("mAP50-95)"), std::string::npos);
    EXPECT_NE(table.find("all"), std::string::npos);
    EXPECT_NE(table.find("dog"), std::string::npos);
    const Json pr = pr_curve_json(m, {"cat", "dog"});
    EXPECT_EQ(pr.at("recall").size(), 1000u);
    EXPECT_EQ(pr.at("classes")[0].at("precision").size(), 1000u);
}

}  // namespace
}  // namespace crucible::detect
