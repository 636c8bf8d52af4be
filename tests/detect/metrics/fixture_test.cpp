// The reference metrics of ../shared/fixtures/map/ (48 images, 4 classes) must be reproduced to
// 1e-6: precision, recall, mAP50, mAP50-95, fitness, per-class AP50 and AP50-95.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/base/json.h"
#include "plugins/detect/metrics/metrics_report.h"
#include "plugins/detect/metrics/prediction_folder.h"

namespace crucible::detect {
namespace {

namespace fs = std::filesystem;

const fs::path kMapDir = fs::path(CRUCIBLE_FIXTURES_DIR) / "map";

double max_abs_diff_to_expected(const DetectionMetrics& m, const Json& expected) {
    double worst = 0;
    auto check = [&](double got, double want, const std::string& what) {
        const double d = std::abs(got - want);
        EXPECT_NEAR(got, want, 1e-6) << what;
        std::printf("  %-22s %.17g  reference %.17g  |diff| %.3g\n", what.c_str(), got, want, d);
        worst = std::max(worst, d);
    };
    check(m.precision, expected.at("metrics/precision(B)").get<double>(), "precision");
    check(m.recall, expected.at("metrics/recall(B)").get<double>(), "recall");
    check(m.map50, expected.at("metrics/mAP50(B)").get<double>(), "mAP50");
    check(m.map50_95, expected.at("metrics/mAP50-95(B)").get<double>(), "mAP50-95");
    check(m.fitness, expected.at("fitness").get<double>(), "fitness");
    const auto& ap50 = expected.at("per_class_ap50");
    const auto& ap = expected.at("per_class_ap50_95");
    EXPECT_EQ(m.classes.size(), ap50.size());
    for (std::size_t c = 0; c < m.classes.size() && c < ap50.size(); ++c) {
        check(m.classes[c].map50, ap50[c].get<double>(), "AP50 of class " + std::to_string(c));
        check(m.classes[c].map50_95, ap[c].get<double>(), "AP50-95 of class " + std::to_string(c));
    }
    return worst;
}

TEST(MapFixture, MatchesReferenceMetrics) {
    if (!fs::exists(kMapDir / "expected.json")) GTEST_SKIP() << "no " << kMapDir;
    const Json expected = read_json_file(kMapDir / "expected.json");
    const auto dataset = load_label_folder(kMapDir / "labels");
    ASSERT_EQ(dataset.images.size(), 48u);
    PredictionFolderOptions options;
    options.imgsz = 320;  // the reference scaled the boxes to 320 px
    const auto result = evaluate_prediction_folder(dataset, kMapDir / "predictions", options);
    EXPECT_EQ(result.prediction_files, 48);
    EXPECT_TRUE(result.unmatched_files.empty());
    const double worst = max_abs_diff_to_expected(result.metrics, expected);
    std::printf("map fixture: max |difference| to the reference = %.3g\n", worst);
    std::printf("%s", results_table(result.metrics, {}).c_str());
}

// IoU does not depend on the pixel scale; another scale must give the same figures.
TEST(MapFixture, ScaleDoesNotMatter) {
    if (!fs::exists(kMapDir / "expected.json")) GTEST_SKIP() << "no " << kMapDir;
    const Json expected = read_json_file(kMapDir / "expected.json");
    const auto dataset = load_label_folder(kMapDir / "labels");
    PredictionFolderOptions options;
    options.imgsz = 1280;
    const auto result = evaluate_prediction_folder(dataset, kMapDir / "predictions", options);
    max_abs_diff_to_expected(result.metrics, expected);
}

}  // namespace
}  // namespace crucible::detect
