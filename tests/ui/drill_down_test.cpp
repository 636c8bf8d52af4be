// Drill-down, offscreen, end to end with the command line of this build and the suite's
// trained detector (CTest fixture trained_shapes): a run's confusion matrix in its monitor, a click
// on a cell, the run's images scored once (`crucible val ... per_image=`), the images behind the
// cell listed worst first, then one opened in the editor with its labels and the model's
// predictions over them; a point of a class's PR curve to the images behind it; the metrics of each
// station (tags set in the studio reach `val` through the snapshot) and a station's images; and the
// run's Export ONNX…, re-scored on its dataset.
#include <gtest/gtest.h>

#include <qcustomplot.h>

#include <QApplication>
#include <QFileInfo>
#include <QPushButton>
#include <QTabWidget>
#include <QTableWidget>
#include <QTest>

#include "core/base/child_process.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/data/pr_operating_point.h"
#include "core/data/synth/synth.h"
#include "core/store/dataset_edit.h"
#include "core/store/dataset_store.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "tests/support/built_programs.h"
#include "tests/ui/qt_test_env.h"
#include "ui/annotation_editor.h"
#include "ui/drill_down.h"
#include "ui/eval_panels.h"
#include "ui/log_console.h"
#include "ui/main_window.h"
#include "ui/run_files.h"
#include "ui/run_monitor.h"

using namespace crucible;
using namespace crucible::ui;
namespace fs = std::filesystem;

namespace {

const fs::path kCli = uitest::command_line_program();

// Runs the command line; its output, or a failure naming it.
std::string cli(const std::vector<std::string>& args, const fs::path& log) {
    ChildOptions o;
    o.program = kCli;
    o.args = args;
    o.log_file = log;
    const int code = ChildProcess::start(o)->wait().code;
    const std::string out = read_file_bytes(log);
    EXPECT_EQ(code, 0) << out;
    return out;
}

template <typename T>
T* tab_of_type(MainWindow& window, int skip = 0) {
    for (int i = 0; i < window.tabs()->count(); ++i)
        if (auto* w = qobject_cast<T*>(window.tabs()->widget(i)); w && skip-- == 0) return w;
    return nullptr;
}

}  // namespace

TEST(DrillDown, FromAConfusionCellToItsImagesAndIntoTheEditor) {
    if (!uitest::command_line_built())
        GTEST_SKIP() << "crucible (the command line) is not in this build (studio-only build)";
    // A detector that finds things (the suite's CTest fixture "trained_shapes": yolov8n, 40
    // epochs on synthetic 96 px shapes of 2 classes) and its dataset, 16 validation images.
    const fs::path trained = CRUCIBLE_TRAINED_SHAPES_DIR;
    const auto trained_weights =
        trained / "runs" / "train" / "artifacts" / "weights" / "best.safetensors";
    ASSERT_TRUE(fs::exists(trained_weights)) << "the fixture trained_shapes did not run";
    const auto dir = uitest::temp_dir();
    const auto yaml = trained / "shapes" / "data.yaml";
    std::int64_t run = 0;
    fs::path files;
    {
        auto p = store::Project::create(dir / "p.crucible");
        store::ImportOptions io;
        io.name = "shapes";
        const auto dataset = store::import_dataset_from(*p, yaml, "yolo", io).dataset_id;
        // Two stations, set in the studio's store: the snapshot carries them to `val`.
        auto ids = p->db().prepare(
            "SELECT id FROM images WHERE dataset_id = ? AND split = 'val' ORDER BY id");
        ids.bind(1, dataset);
        int n = 0;
        while (ids.step())
            store::set_image_tag(*p, ids.column_int64(0), "station", n++ % 2 ? "B 2" : "甲");
        ASSERT_EQ(n, 16);
        store::RunSetup setup{.name = "shapes run", .task = "detect.yolo", .dataset_id = dataset};
        setup.options = {{"imgsz", 96}};
        setup.state = "succeeded";
        run = store::create_run(*p, setup);
        files = store::run_files_folder(*p, run);
    }
    // The run's files as the studio keeps them: its weights and its validation report.
    const auto weights = files / "artifacts" / "weights" / "best.safetensors";
    fs::create_directories(weights.parent_path());
    fs::copy_file(trained_weights, weights);
    const std::string val =
        cli({"val", "detect", "data=" + path_to_utf8(yaml), "model=" + path_to_utf8(weights),
             "imgsz=96", "json=true", "curves=true"},
            dir / "val.log");
    const Json report = parse_json(val.substr(val.find('{')), "val");
    write_file_atomically(files / kRunFilesComplete, "{}");

    MainWindow window;
    window.set_command_line(QString::fromStdString(path_to_utf8(kCli)));
    window.show();
    ASSERT_TRUE(window.open_project(QString::fromStdString(path_to_utf8(dir / "p.crucible"))));
    RunMonitor* monitor = window.open_runs({run});
    ASSERT_NE(monitor, nullptr);
    monitor->set_validation_report(0, report);
    ConfusionMatrixPanel* confusion = monitor->confusion_panel();
    ASSERT_NE(confusion, nullptr);
    // The fullest cell off the diagonal: what a quality engineer asks about.
    const auto& matrix = report["confusion_matrix"]["matrix"];
    int predicted = 0, truth = 0;
    long long most = -1;
    const int cells = static_cast<int>(matrix.size());  // the classes and the background
    for (int r = 0; r < cells; ++r)
        for (int c = 0; c < cells; ++c)
            if (r != c && matrix[r][c].get<long long>() > most) {
                most = matrix[r][c].get<long long>();
                predicted = r;
                truth = c;
            }
    ASSERT_GT(most, 0);
    monitor->panels()->setCurrentWidget(confusion);
    confusion->plot()->replot();
    int clicked_p = -1, clicked_t = -1;
    QObject::connect(confusion, &ConfusionMatrixPanel::cell_clicked, [&](int p, int t) {
        clicked_p = p;
        clicked_t = t;
    });
    QTest::mouseClick(confusion->plot(), Qt::LeftButton, {},
                      confusion->cell_position(predicted, truth));
    ASSERT_EQ(clicked_p, predicted)
        << "plot " << confusion->plot()->width() << "x" << confusion->plot()->height()
        << ", cell at " << confusion->cell_position(predicted, truth).x() << ","
        << confusion->cell_position(predicted, truth).y();
    ASSERT_EQ(clicked_t, truth);

    // The images are scored once in the background, then listed.
    DrillDownView* view = nullptr;
    ASSERT_TRUE(
        uitest::wait_for([&] { return (view = tab_of_type<DrillDownView>(window)); }, 120000));
    EXPECT_TRUE(fs::exists(files / "per_image.json"));
    ASSERT_GT(view->row_count(), 0);
    long long counted = 0;
    for (int row = 0; row < view->row_count(); ++row) {
        const auto& im = view->image_at(row);
        EXPECT_TRUE(im.counts_in(predicted, truth)) << path_to_utf8(im.path);
        counted += std::count(im.cells.begin(), im.cells.end(), std::pair{predicted, truth});
        if (row > 0) {
            EXPECT_LE(im.false_positives, view->image_at(row - 1).false_positives)
                << "the worst first";
        }
    }
    EXPECT_EQ(counted, most) << "every count of the cell is in the images listed";
    // A tag no image has empties the list; clearing it brings them back.
    const int listed = view->row_count();
    view->set_tag_filter(QStringLiteral("station=9"));
    EXPECT_EQ(view->row_count(), 0);
    view->set_tag_filter(QString());
    EXPECT_EQ(view->row_count(), listed);

    // Double-click: the image in the editor, the model's predictions drawn over its labels.
    const auto first = view->image_at(0);
    emit view->table()->cellDoubleClicked(0, 0);
    AnnotationEditor* editor = nullptr;
    ASSERT_TRUE(uitest::wait_for([&] { return (editor = tab_of_type<AnnotationEditor>(window)); }));
    EXPECT_EQ(editor->content()
                  ->images[static_cast<std::size_t>(editor->current_index())]
                  .path.filename(),
              first.path.filename());
    std::size_t above = 0;
    for (const auto& p : first.predictions)
        above += p.conf >= view->report().conf;
    EXPECT_EQ(editor->shown_suggestions().size(), above);
    EXPECT_DOUBLE_EQ(editor->suggestion_threshold(), view->report().conf);

    // A point of a class's PR curve: the images behind it, at the threshold reaching its recall.
    PrCurvePanel* pr = monitor->pr_curve_panel();
    ASSERT_NE(pr, nullptr);
    window.tabs()->setCurrentWidget(monitor);
    monitor->panels()->setCurrentWidget(pr);
    QApplication::processEvents();
    pr->plot()->replot();
    const double recall = 0.3;
    int graph = -1;
    for (int g = 0; g < pr->mean_graph() && graph < 0; ++g)
        if (pr->curves().classes[static_cast<std::size_t>(g)].precision[300] > 0.2) graph = g;
    ASSERT_GE(graph, 0) << "the trained model reaches recall 0.3 in no class";
    int clicked_cls = -1;
    double clicked_recall = -1;
    QObject::connect(pr, &PrCurvePanel::point_clicked, [&](int cls, double r) {
        clicked_cls = cls;
        clicked_recall = r;
    });
    QTest::mouseClick(pr->plot(), Qt::LeftButton, {}, pr->point_position(graph, recall));
    ASSERT_GE(clicked_cls, 0) << "the click at the curve found no curve";
    EXPECT_NEAR(clicked_recall, recall, 0.01);
    DrillDownView* at_point = nullptr;
    ASSERT_TRUE(
        uitest::wait_for([&] { return (at_point = tab_of_type<DrillDownView>(window, 1)); }));
    ASSERT_TRUE(at_point->operating_point().has_value());
    const data::OperatingPoint point = *at_point->operating_point();
    EXPECT_EQ(point.cls, clicked_cls);
    EXPECT_GE(point.recall(), clicked_recall - 1e-9) << "the threshold reaches the recall";
    // Its precision is on or under the curve (the curve is the envelope of the points).
    std::size_t column = 0;
    for (std::size_t c = 0; c < pr->curves().classes.size(); ++c)
        if (pr->curves().classes[c].cls == clicked_cls) column = c;
    const auto& grid = pr->curves().recall;
    const auto at = static_cast<std::size_t>(
        std::lower_bound(grid.begin(), grid.end(), clicked_recall) - grid.begin());
    EXPECT_LE(point.precision(), pr->curves().classes[column].precision[at] + 1e-6);
    // The rows are the point's images: their counts add up to the point's.
    data::ClassCounts summed;
    for (int row = 0; row < at_point->row_count(); ++row) {
        const auto c = data::class_counts(at_point->image_at(row), point.cls, point.conf);
        EXPECT_GT(c.found() + c.misses, 0);
        summed.true_positives += c.true_positives;
        summed.false_positives += c.false_positives;
        summed.misses += c.misses;
        EXPECT_EQ(at_point->table()
                      ->item(row, DrillDownView::kFalsePositives)
                      ->data(Qt::DisplayRole)
                      .toInt(),
                  c.false_positives);
    }
    EXPECT_EQ(summed.true_positives, point.counts.true_positives);
    EXPECT_EQ(summed.false_positives, point.counts.false_positives);
    EXPECT_EQ(summed.misses, point.counts.misses);
    EXPECT_DOUBLE_EQ(at_point->shown_conf(), point.conf) << "opened images show what counted";

    // Metrics by tag: one row per station from the per-class table's button; a row drills down.
    ASSERT_NE(monitor->per_class_table(), nullptr);
    monitor->per_class_table()->by_tag_button()->click();
    TagMetricsView* by_tag = nullptr;
    ASSERT_TRUE(uitest::wait_for([&] { return (by_tag = tab_of_type<TagMetricsView>(window)); }));
    EXPECT_TRUE(by_tag->keys().contains(QStringLiteral("station")));
    by_tag->show_key(QStringLiteral("station"));
    ASSERT_EQ(by_tag->row_count(), 2);
    EXPECT_EQ(by_tag->metrics_at(0).images + by_tag->metrics_at(1).images, 16);
    EXPECT_LE(by_tag->metrics_at(0).map50, by_tag->metrics_at(1).map50) << "the weakest first";
    const QString station = by_tag->value_at(0);
    emit by_tag->table()->cellDoubleClicked(0, 0);
    DrillDownView* of_station = nullptr;
    ASSERT_TRUE(
        uitest::wait_for([&] { return (of_station = tab_of_type<DrillDownView>(window, 2)); }));
    EXPECT_EQ(of_station->row_count(), 8);
    for (int row = 0; row < of_station->row_count(); ++row)
        EXPECT_EQ(QString::fromStdString(of_station->image_at(row).tags.at("station")), station);

    // Export ONNX… of the same run: written, re-scored on the run's dataset, said in the log.
    const auto onnx = dir / "shapes run.onnx";
    window.export_run_onnx(run, QString::fromStdString(path_to_utf8(onnx)));
    ASSERT_TRUE(uitest::wait_for(
        [&] { return window.log_console()->toPlainText().contains("export checked"); }, 120000))
        << window.log_console()->toPlainText().toStdString();
    EXPECT_GT(fs::file_size(onnx), 1'000'000u);
    EXPECT_TRUE(window.log_console()->toPlainText().contains("input 1x3x96x96"));
}
