// Drill-down, offscreen, end to end with the command line of this build and the reference's
// yolov8n fixture: a run's confusion matrix in its monitor, a click on a cell, the run's images
// scored once (`crucible val ... per_image=`), the images behind the cell listed worst first,
// then one opened in the editor with its labels and the model's predictions over them; and the
// run's Export ONNX…, re-scored on its dataset.
#include <gtest/gtest.h>

#include <qcustomplot.h>

#include <QFileInfo>
#include <QTabWidget>
#include <QTableWidget>
#include <QTest>

#include "core/base/child_process.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/data/synth/synth.h"
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
T* tab_of_type(MainWindow& window) {
    for (int i = 0; i < window.tabs()->count(); ++i)
        if (auto* w = qobject_cast<T*>(window.tabs()->widget(i))) return w;
    return nullptr;
}

}  // namespace

TEST(DrillDown, FromAConfusionCellToItsImagesAndIntoTheEditor) {
    if (!uitest::command_line_built())
        GTEST_SKIP() << "crucible (the command line) is not in this build (studio-only build)";
    const auto dir = uitest::temp_dir();
    const auto yaml = uitest::fixture_like_shapes(dir / "synth", 2, 6, 21);
    std::int64_t run = 0;
    fs::path files;
    {
        auto p = store::Project::create(dir / "p.crucible");
        store::ImportOptions io;
        io.name = "shapes";
        const auto dataset = store::import_dataset_from(*p, yaml, "yolo", io).dataset_id;
        store::RunSetup setup{.name = "shapes run", .task = "detect.yolo", .dataset_id = dataset};
        setup.options = {{"imgsz", 320}};
        setup.state = "succeeded";
        run = store::create_run(*p, setup);
        files = store::run_files_folder(*p, run);
    }
    // The run's files as the studio keeps them: its weights and its validation report.
    const auto weights = files / "artifacts" / "weights" / "best.safetensors";
    fs::create_directories(weights.parent_path());
    cli({"export", "detect",
         "model=" +
             path_to_utf8(fs::path(CRUCIBLE_FIXTURES_DIR) / "yolov8" / "yolov8n_shapes11.pt"),
         "out=" + path_to_utf8(weights)},
        dir / "export.log");
    const std::string val = cli({"val", "detect", "data=" + path_to_utf8(yaml),
                                 "model=" + path_to_utf8(weights), "imgsz=320", "json=true"},
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
    for (int r = 0; r < 5; ++r)
        for (int c = 0; c < 5; ++c)
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

    // Export ONNX… of the same run: written, re-scored on the run's dataset, said in the log.
    const auto onnx = dir / "shapes run.onnx";
    window.export_run_onnx(run, QString::fromStdString(path_to_utf8(onnx)));
    ASSERT_TRUE(uitest::wait_for(
        [&] { return window.log_console()->toPlainText().contains("export checked"); }, 120000))
        << window.log_console()->toPlainText().toStdString();
    EXPECT_GT(fs::file_size(onnx), 1'000'000u);
    EXPECT_TRUE(window.log_console()->toPlainText().contains("input 1x3x320x320"));
}
