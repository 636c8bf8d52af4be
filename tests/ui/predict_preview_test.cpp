// Predict preview: a run's weights on chosen pictures through the crucible command line, every
// detection kept down to confidence 0.001 and the slider choosing which are drawn. Uses the
// Ultralytics yolov8n fixture trained on shapes and the command line of this build.
#include <gtest/gtest.h>

#include <QFileInfo>
#include <QListWidget>
#include <QTabWidget>

#include "core/base/file_io.h"
#include "core/data/synth/synth.h"
#include "core/store/dataset_store.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "tests/support/built_programs.h"
#include "tests/ui/qt_test_env.h"
#include "ui/main_window.h"
#include "ui/predict_preview.h"

using namespace crucible;
using namespace crucible::ui;
namespace fs = std::filesystem;

namespace {

const QString kCli = QString::fromStdString(
    crucible::path_to_utf8(crucible::test_support::built_program("crucible", "app/cli")));

}  // namespace

TEST(PredictPreview, DetectionsFollowTheConfidenceSlider) {
    if (!QFileInfo(kCli).isExecutable()) GTEST_SKIP() << "crucible (the command line) not built";
    const auto dir = uitest::temp_dir();
    data::SynthOptions o;
    o.classes = 4;
    o.imgsz = 320;
    o.train = 2;
    o.val = 3;
    o.seed = 5;
    const auto yaml = data::write_synth_dataset(dir / "synth", o);
    std::int64_t run = 0;
    {
        auto p = store::Project::create(dir / "p.crucible");
        store::ImportOptions io;
        io.name = "shapes";
        const auto dataset = store::import_dataset_from(*p, yaml, "yolo", io).dataset_id;
        store::RunSetup setup{.name = "shapes run", .task = "detect.yolo", .dataset_id = dataset};
        setup.options = {{"imgsz", 320}};  // the preview predicts at the run's size
        run = store::create_run(*p, setup);
    }
    std::vector<fs::path> images;
    for (const auto& e : fs::directory_iterator(dir / "synth" / "images" / "val"))
        images.push_back(e.path());
    ASSERT_EQ(images.size(), 3u);
    MainWindow window;
    window.show();
    ASSERT_TRUE(window.open_project(QString::fromStdString(path_to_utf8(dir / "p.crucible"))));
    const auto weights = fs::path(CRUCIBLE_FIXTURES_DIR) / "yolov8" / "yolov8n_shapes11.pt";
    PredictPreview* preview = window.open_predict_preview(run, images, weights, kCli);
    ASSERT_NE(preview, nullptr);
    EXPECT_EQ(window.tabs()->currentWidget(), preview);
    ASSERT_TRUE(uitest::wait_for([&] { return preview->finished(); }, 120000));
    ASSERT_TRUE(preview->error().isEmpty()) << preview->error().toStdString();
    ASSERT_EQ(preview->detections().size(), 3u);
    std::size_t all = 0;
    for (const auto& image : preview->detections()) {
        all += image.size();
        for (const auto& d : image) {
            EXPECT_GE(d.conf, PredictPreview::kLowestConfidence);
            EXPECT_LT(d.cls, 11);
        }
    }
    ASSERT_GT(all, 0u) << "the shapes model found nothing at confidence 0.001";
    preview->set_confidence(PredictPreview::kLowestConfidence);
    EXPECT_EQ(preview->shown_detections(), static_cast<int>(all));
    // The slider keeps exactly the detections at or above it, without predicting again.
    auto at_least = [&](double conf) {
        int n = 0;
        for (const auto& image : preview->detections())
            for (const auto& d : image)
                n += d.conf >= conf;
        return n;
    };
    preview->set_confidence(0.5);
    const int at_half = preview->shown_detections();
    EXPECT_EQ(at_half, at_least(0.5));
    preview->set_confidence(0.99);
    EXPECT_LE(preview->shown_detections(), at_half);
    EXPECT_EQ(preview->shown_detections(), at_least(0.99));
    EXPECT_LT(at_least(0.5), static_cast<int>(all));  // the slider does drop some
    EXPECT_EQ(preview->pictures()->count(), 3);
}

TEST(PredictPreview, MissingCommandLineIsSaid) {
    PredictPreview preview({}, "detect.yolo", "w.pt", {}, {});
    bool ok = true;
    QObject::connect(&preview, &PredictPreview::done, [&](bool r) { ok = r; });
    preview.start();
    EXPECT_FALSE(ok);
    EXPECT_TRUE(preview.error().contains("command line")) << preview.error().toStdString();
}

TEST(PredictPreview, PredictionRowsAreReadAndBadRowsSkipped) {
    const auto d = parse_detections(
        "0 0.5 0.5 0.2 0.2 0.91\n3 0.1 0.2 0.05 0.05 0.02\n"
        "x 0.5 0.5 0.2 0.2 0.9\n1 0.5 0.5 0.2\n-1 0.5 0.5 0.2 0.2 0.9\n"
        "2.5 0.5 0.5 0.2 0.2 0.9\n\n");
    ASSERT_EQ(d.size(), 2u);
    EXPECT_EQ(d[0].cls, 0);
    EXPECT_DOUBLE_EQ(d[0].conf, 0.91);
    EXPECT_EQ(d[1].cls, 3);
    EXPECT_TRUE(parse_detections("").empty());
}
