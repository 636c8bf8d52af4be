// Model-assisted labelling in the annotation editor, offscreen, with the command line of this
// build and the reference's yolov8n fixture (four classes of synthetic shapes): pre-label the
// unlabelled images (Cancel works), see suggestions without anything saved, accept one (Enter),
// undo it (the suggestion comes back), reject one (X), accept every shown one (Shift+Enter),
// follow the review order (R), write the label files (Ctrl+S), then train one epoch on them.
#include <gtest/gtest.h>

#include <QFileInfo>
#include <QTest>

#include "core/base/child_process.h"
#include "core/base/file_io.h"
#include "core/data/dataset_io.h"
#include "core/data/synth/synth.h"
#include "core/store/dataset_edit.h"
#include "core/store/dataset_store.h"
#include "core/store/project.h"
#include "tests/support/built_programs.h"
#include "tests/ui/qt_test_env.h"
#include "ui/annotation_editor.h"
#include "ui/annotation_store.h"

using namespace crucible;
using namespace crucible::ui;
namespace fs = std::filesystem;

namespace {

const fs::path kCli = uitest::command_line_program();
const fs::path kWeights = fs::path(CRUCIBLE_FIXTURES_DIR) / "yolov8" / "yolov8n_shapes11.pt";

// What the store holds for image `index` of the editor's dataset.
std::size_t stored_boxes(store::Project& project, const DatasetContent& content, int index) {
    return load_dataset_content(project, content.dataset_id)
        .images[static_cast<std::size_t>(index)]
        .boxes.size();
}

}  // namespace

TEST(AssistedLabelling, PrelabelAcceptUndoRejectSaveAndTrain) {
    if (!uitest::command_line_built())
        GTEST_SKIP() << "crucible (the command line) is not in this build (studio-only build)";
    const auto dir = uitest::temp_dir();
    const auto yaml = uitest::fixture_like_shapes(dir / "synth", 4, 2, 11);
    auto project = store::Project::create(dir / "p.crucible");
    store::ImportOptions io;
    io.name = "shapes";
    const auto dataset = store::import_dataset_from(*project, yaml, "yolo", io).dataset_id;
    // Images 0 and 1 lose their labels: the unlabelled ones to pre-label.
    auto content = std::make_shared<DatasetContent>(load_dataset_content(*project, dataset));
    for (int i : {0, 1}) {
        store::save_image_boxes(*project, dataset, content->images[static_cast<std::size_t>(i)].id,
                                {});
        content->images[static_cast<std::size_t>(i)].boxes.clear();
    }
    AnnotationEditor editor(*project, content);
    editor.show();
    editor.open_image(0);
    ASSERT_TRUE(uitest::wait_for([&] { return editor.image_loaded(); }));

    bool finished = false, ok = false;
    QString message;
    QObject::connect(&editor, &AnnotationEditor::prelabel_finished,
                     [&](bool good, const QString& m) {
                         finished = true;
                         ok = good;
                         message = m;
                     });
    // Cancel: the command is stopped and says so.
    editor.prelabel(QString::fromStdString(path_to_utf8(kCli)), kWeights,
                    AnnotationEditor::PrelabelScope::AllImages, {QStringLiteral("imgsz=320")});
    ASSERT_TRUE(editor.prelabel_running());
    editor.cancel_prelabel();
    ASSERT_TRUE(uitest::wait_for([&] { return finished; }, 30000));
    EXPECT_FALSE(ok);
    EXPECT_EQ(message, QStringLiteral("canceled"));
    EXPECT_EQ(editor.suggestion_count(0), 0);

    finished = false;
    editor.prelabel(QString::fromStdString(path_to_utf8(kCli)), kWeights,
                    AnnotationEditor::PrelabelScope::UnlabelledImages,
                    {QStringLiteral("imgsz=320")});
    ASSERT_TRUE(uitest::wait_for([&] { return finished; }, 120000));
    ASSERT_TRUE(ok) << message.toStdString();
    EXPECT_GT(editor.suggestion_count(0), 0);
    EXPECT_GT(editor.suggestion_count(1), 0);
    EXPECT_EQ(editor.suggestion_count(2), 0) << "a labelled image is not pre-labelled";

    // The fixture's model trained two epochs: its confidences are low, so show them all.
    editor.set_suggestion_threshold(0.001);
    const int shown = static_cast<int>(editor.shown_suggestions().size());
    ASSERT_GE(shown, 3);
    EXPECT_EQ(editor.boxes().size(), 0u);
    EXPECT_EQ(stored_boxes(*project, *content, 0), 0u) << "nothing is saved before an accept";
    EXPECT_EQ(editor.highlighted_suggestion(), 0) << "the most confident one first";

    // Enter accepts the highlighted suggestion: an ordinary box, saved; Ctrl+Z brings it back.
    QTest::keyClick(&editor, Qt::Key_Tab);
    EXPECT_EQ(editor.highlighted_suggestion(), 1);
    const Detection second = editor.shown_suggestions()[1];
    QTest::keyClick(&editor, Qt::Key_Return);
    ASSERT_EQ(editor.boxes().size(), 1u);
    EXPECT_EQ(editor.boxes()[0].cls, second.cls);
    EXPECT_DOUBLE_EQ(editor.boxes()[0].cx, second.cx);
    EXPECT_EQ(static_cast<int>(editor.shown_suggestions().size()), shown - 1);
    EXPECT_EQ(stored_boxes(*project, *content, 0), 1u);
    QTest::keyClick(&editor, Qt::Key_Z, Qt::ControlModifier);
    EXPECT_EQ(editor.boxes().size(), 0u);
    EXPECT_EQ(static_cast<int>(editor.shown_suggestions().size()), shown);
    EXPECT_EQ(stored_boxes(*project, *content, 0), 0u);

    // X rejects (nothing saved); Shift+Enter accepts every shown suggestion in one step.
    QTest::keyClick(&editor, Qt::Key_X);
    EXPECT_EQ(static_cast<int>(editor.shown_suggestions().size()), shown - 1);
    EXPECT_EQ(editor.boxes().size(), 0u);
    editor.set_suggestion_threshold(editor.shown_suggestions()[2].conf);
    const auto taking = editor.shown_suggestions().size();
    QTest::keyClick(&editor, Qt::Key_Return, Qt::ShiftModifier);
    EXPECT_EQ(editor.boxes().size(), taking);
    EXPECT_TRUE(editor.shown_suggestions().empty());
    EXPECT_EQ(stored_boxes(*project, *content, 0), taking);
    QTest::keyClick(&editor, Qt::Key_Z, Qt::ControlModifier);
    EXPECT_EQ(editor.boxes().size(), 0u);
    QTest::keyClick(&editor, Qt::Key_Y, Qt::ControlModifier);
    EXPECT_EQ(editor.boxes().size(), taking);

    // R: the review order holds the pre-labelled images; the next one opens.
    const auto order = editor.review_order();
    ASSERT_EQ(order.size(), 2u);
    QTest::keyClick(&editor, Qt::Key_R);
    EXPECT_EQ(editor.current_index(), 1);
    editor.set_suggestion_threshold(0.001);
    EXPECT_GT(editor.accept_shown_suggestions(), 0);
    EXPECT_FALSE(editor.boxes().empty());

    // Ctrl+S writes the label files; a run trains on them as on any labels.
    int written = -1;
    QObject::connect(&editor, &AnnotationEditor::labels_written, [&](int n) { written = n; });
    QTest::keyClick(&editor, Qt::Key_S, Qt::ControlModifier);
    ASSERT_TRUE(uitest::wait_for([&] { return written >= 0; }, 30000));
    EXPECT_EQ(written, 2);
    const auto on_disk = data::load_detection_dataset(dir / "synth" / "data.yaml").dataset;
    std::size_t labelled = 0;
    for (const auto& img : on_disk.images)
        labelled += !img.boxes.empty();
    EXPECT_EQ(labelled, on_disk.images.size()) << "the two pre-labelled images have labels now";

    ChildOptions train;
    train.program = kCli;
    train.args = {"train",         "detect",    "data=" + path_to_utf8(dir / "synth" / "data.yaml"),
                  "model=yolov8n", "epochs=1",  "imgsz=64",
                  "batch=2",       "workers=1", "project=" + path_to_utf8(dir / "runs"),
                  "name=t"};
    train.log_file = dir / "train.log";
    ASSERT_EQ(ChildProcess::start(train)->wait().code, 0) << read_file_bytes(dir / "train.log");
    EXPECT_TRUE(fs::exists(dir / "runs" / "t" / "results.csv"));
}
