// Box edits in the annotation editor reach the project at once, and undo / redo (keys and
// stack) put the project back and forth; the dataset view lists and filters the images and
// decodes thumbnails in the background.
#include <gtest/gtest.h>

#include <QComboBox>
#include <QLineEdit>
#include <QListView>
#include <QListWidget>
#include <QMessageBox>
#include <QTabWidget>
#include <QTest>
#include <QUndoStack>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/dataset_io.h"
#include "core/data/formats/formats.h"
#include "core/data/formats/yolo_labels.h"
#include "core/data/synth/synth.h"
#include "core/store/dataset_edit.h"
#include "core/store/dataset_store.h"
#include "core/store/project.h"
#include "tests/ui/qt_test_env.h"
#include "ui/annotation_editor.h"
#include "ui/annotation_store.h"
#include "ui/class_colors.h"
#include "ui/class_editor.h"
#include "ui/dataset_view.h"
#include "ui/main_window.h"
#include "ui/options_form.h"
#include "ui/run_setup.h"
#include "ui/thumbnail_cache.h"

using namespace crucible;
using namespace crucible::ui;

namespace {

struct Fixture {
    std::filesystem::path dir = uitest::temp_dir();
    std::unique_ptr<store::Project> project;
    std::int64_t dataset = 0;

    Fixture() {
        data::SynthOptions o;
        o.train = 6;
        o.val = 3;
        o.classes = 3;
        o.imgsz = 96;
        o.seed = 3;
        auto yaml = data::write_synth_dataset(dir / "synth", o);
        project = store::Project::create(dir / "p.crucible");
        store::ImportOptions io;
        io.name = "shapes";
        dataset = store::import_dataset_from(*project, yaml, "yolo", io).dataset_id;
    }
    std::string version() { return store::get_dataset(*project, dataset).version_hash; }
    // An editor on the dataset's first image, shown, the picture loaded (check image_loaded).
    std::unique_ptr<AnnotationEditor> open_editor(std::shared_ptr<DatasetContent> content) {
        auto editor = std::make_unique<AnnotationEditor>(*project, std::move(content));
        editor->show();
        editor->open_image(0);
        uitest::wait_for([&] { return editor->image_loaded(); });
        return editor;
    }
    // The project in a main window instead (the window holds its lock from then on).
    bool open_in(MainWindow& window) {
        const auto file = project->path();
        project.reset();
        window.show();
        return window.open_project(QString::fromStdString(path_to_utf8(file)));
    }
};

}  // namespace

TEST(AnnotationEditor, DrawWithKeysAndMouseThenUndoRedoChangeTheStore) {
    Fixture fx;
    auto content = std::make_shared<DatasetContent>(load_dataset_content(*fx.project, fx.dataset));
    ASSERT_EQ(content->images.size(), 9u);
    AnnotationEditor editor(*fx.project, content);
    editor.resize(800, 600);
    editor.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&editor));
    editor.activateWindow();
    ASSERT_TRUE(uitest::wait_for([&] { return editor.image_loaded(); }));

    const auto image_id = content->images[0].id;
    const auto before = read_image_boxes(*fx.project, image_id);
    const std::string v0 = fx.version();
    AnnotationCanvas* canvas = editor.canvas();
    canvas->setFocus();

    // W, then drag a box over the middle of the image.
    editor.set_current_class(2);
    QTest::keyClick(canvas, Qt::Key_W);
    ASSERT_TRUE(canvas->draw_mode());
    const QRectF r = canvas->image_rect();
    const QPoint p0 = (r.topLeft() + QPointF(r.width() * 0.25, r.height() * 0.25)).toPoint();
    const QPoint p1 = (r.topLeft() + QPointF(r.width() * 0.75, r.height() * 0.5)).toPoint();
    QTest::mousePress(canvas, Qt::LeftButton, {}, p0);
    QTest::mouseRelease(canvas, Qt::LeftButton, {}, p1);

    auto after = read_image_boxes(*fx.project, image_id);
    ASSERT_EQ(after.size(), before.size() + 1);
    const data::Box added = after.back();
    EXPECT_EQ(added.cls, 2);
    EXPECT_NEAR(added.cx, 0.5, 0.02);
    EXPECT_NEAR(added.cy, 0.375, 0.02);
    EXPECT_NEAR(added.w, 0.5, 0.02);
    EXPECT_NEAR(added.h, 0.25, 0.02);
    const std::string v1 = fx.version();
    EXPECT_NE(v1, v0);  // the dataset version follows its content

    QTest::keyClick(canvas, Qt::Key_Z, Qt::ControlModifier);
    EXPECT_EQ(read_image_boxes(*fx.project, image_id), before);
    EXPECT_EQ(fx.version(), v0);
    QTest::keyClick(canvas, Qt::Key_Y, Qt::ControlModifier);
    EXPECT_EQ(read_image_boxes(*fx.project, image_id), after);
    EXPECT_EQ(fx.version(), v1);

    // Move the new box by dragging its inside; Del deletes the selected box.
    const QPointF centre = canvas->to_widget(added.cx, added.cy);
    QTest::mousePress(canvas, Qt::LeftButton, {}, centre.toPoint());
    QTest::mouseRelease(canvas, Qt::LeftButton, {},
                        (centre + QPointF(r.width() * 0.1, 0)).toPoint());
    auto moved = read_image_boxes(*fx.project, image_id);
    ASSERT_EQ(moved.size(), after.size());
    EXPECT_NEAR(moved.back().cx, 0.6, 0.02);
    EXPECT_NEAR(moved.back().w, added.w, 1e-9);
    EXPECT_EQ(editor.selected(), static_cast<int>(moved.size()) - 1);
    QTest::keyClick(canvas, Qt::Key_Delete);
    EXPECT_EQ(read_image_boxes(*fx.project, image_id), before);
    EXPECT_EQ(editor.undo_stack()->count(), 3);
    editor.undo_stack()->undo();
    editor.undo_stack()->undo();
    EXPECT_EQ(read_image_boxes(*fx.project, image_id), after);

    // D goes to the next image; an undo there restores the first image's boxes and shows it.
    QTest::keyClick(canvas, Qt::Key_D);
    EXPECT_EQ(editor.current_index(), 1);
    editor.undo_stack()->undo();
    EXPECT_EQ(editor.current_index(), 0);
    EXPECT_EQ(read_image_boxes(*fx.project, image_id), before);
    QTest::keyClick(canvas, Qt::Key_A);
    EXPECT_EQ(editor.current_index(), 0);  // no image before the first
}

TEST(AnnotationEditor, InvalidBoxesAreRefusedAndNothingIsSaved) {
    Fixture fx;
    auto content = std::make_shared<DatasetContent>(load_dataset_content(*fx.project, fx.dataset));
    const auto image_id = content->images[0].id;
    const auto before = read_image_boxes(*fx.project, image_id);
    EXPECT_THROW(save_image_boxes(*fx.project, fx.dataset, image_id, {{7, 0.5, 0.5, 0.1, 0.1}}),
                 InputError);  // class 7 of 3
    EXPECT_THROW(save_image_boxes(*fx.project, fx.dataset, image_id, {{0, 0.5, 0.5, -0.1, 0.1}}),
                 InputError);
    EXPECT_THROW(save_image_boxes(*fx.project, fx.dataset + 99, image_id, {}), InputError);
    EXPECT_EQ(read_image_boxes(*fx.project, image_id), before);
}

// What a run set up from the Dataset picker trains on: a snapshot of the dataset as the studio
// shows it, edits included; one per version, written once, its images hard links of the
// originals; an older version's snapshot stays as it was.
TEST(DatasetSnapshot, HoldsTheLabelsAsEditedOnePerVersion) {
    Fixture fx;
    const auto first = store::snapshot_dataset(*fx.project, fx.dataset);
    EXPECT_EQ(first.filename(), "data.yaml");
    EXPECT_NE(path_to_utf8(first).find(fx.version().substr(0, 12)), std::string::npos);
    const auto written = std::filesystem::last_write_time(first);
    EXPECT_EQ(store::snapshot_dataset(*fx.project, fx.dataset), first);  // reused
    EXPECT_EQ(std::filesystem::last_write_time(first), written);

    auto content = load_dataset_content(*fx.project, fx.dataset);
    const data::DetectionDataset frozen = data::load_detection_dataset(first).dataset;
    ASSERT_EQ(frozen.images.size(), content.images.size());
    EXPECT_EQ(frozen.images[0].boxes, content.images[0].boxes);
    EXPECT_GE(std::filesystem::hard_link_count(frozen.root / frozen.images[0].path), 2u);

    // An edit in the studio makes a new version, and the run's snapshot follows it.
    const std::vector<data::Box> edited{{1, 0.25, 0.25, 0.2, 0.2}};
    save_image_boxes(*fx.project, fx.dataset, content.images[0].id, edited);
    const auto second = store::snapshot_dataset(*fx.project, fx.dataset);
    ASSERT_NE(second, first);
    const data::DetectionDataset now = data::load_detection_dataset(second).dataset;
    std::size_t match = 0;
    for (const auto& img : now.images)
        match += img.boxes == edited ? 1 : 0;
    EXPECT_EQ(match, 1u);
    EXPECT_EQ(data::load_detection_dataset(first).dataset.images.size(), frozen.images.size());
}

// A run set up with the Dataset picker trains on the snapshot of what the studio shows: no path
// to type, edits included, and a run created after an edit waits for the new snapshot.
TEST(DatasetSnapshot, TheRunSetupsPickerFillsDataWithTheSnapshot) {
    Fixture fx;
    OptionSchema s("toy.task", "Toy");
    OptionSpec data = option_spec("data", OptionType::Path, nullptr, "data.yaml");
    data.required = true;
    s.add(data);
    RunSetupView view(fx.project.get(), Json::array({s.to_json()}));
    view.show();
    auto data_text = [&] {
        return qobject_cast<QLineEdit*>(view.form()->editor("data"))->text().toStdString();
    };
    ASSERT_TRUE(
        uitest::wait_for([&] { return !data_text().empty(); }))  // written in the background
        << view.error_text().toStdString();
    EXPECT_EQ(data_text(), path_to_utf8(store::snapshot_dataset(*fx.project, fx.dataset)));
    const auto first_run = view.create_run("first");
    ASSERT_GE(first_run, 0) << view.error_text().toStdString();
    EXPECT_EQ(store::get_run(*fx.project, first_run).setup.options["data"], data_text());
    EXPECT_EQ(store::get_run(*fx.project, first_run).setup.dataset_hash, fx.version());

    // An edit: the next run waits for the new snapshot, then trains on it.
    auto content = load_dataset_content(*fx.project, fx.dataset);
    save_image_boxes(*fx.project, fx.dataset, content.images[0].id, {{1, 0.3, 0.3, 0.2, 0.2}});
    EXPECT_EQ(view.create_run("too soon"), -1);
    EXPECT_TRUE(view.error_text().contains("snapshot")) << view.error_text().toStdString();
    const std::string edited = path_to_utf8(store::snapshot_dataset(*fx.project, fx.dataset));
    ASSERT_TRUE(uitest::wait_for([&] { return data_text() == edited; }));
    const auto second_run = view.create_run("second");
    ASSERT_GE(second_run, 0) << view.error_text().toStdString();
    EXPECT_EQ(store::get_run(*fx.project, second_run).setup.options["data"], edited);
}

// Ctrl+S in the editor writes the labels edited in the studio into the YOLO dataset's own label
// files (changed files only), so the dataset on disk is what the studio shows.
TEST(AnnotationEditor, CtrlSWritesTheDatasetsLabelFiles) {
    Fixture fx;
    auto content = std::make_shared<DatasetContent>(load_dataset_content(*fx.project, fx.dataset));
    auto editor_ptr = fx.open_editor(content);
    AnnotationEditor& editor = *editor_ptr;
    ASSERT_TRUE(editor.image_loaded());
    editor.add_box({2, 0.5, 0.5, 0.25, 0.25});
    int written = -1;
    QString failure;
    QObject::connect(&editor, &AnnotationEditor::labels_written, [&](int n) { written = n; });
    QObject::connect(&editor, &AnnotationEditor::failed, [&](const QString& m) { failure = m; });
    QTest::keyClick(&editor, Qt::Key_S, Qt::ControlModifier);
    ASSERT_TRUE(uitest::wait_for([&] { return written >= 0 || !failure.isEmpty(); }))
        << failure.toStdString();
    EXPECT_EQ(written, 1);  // only the edited image's file changed
    const data::DetectionDataset on_disk =
        data::load_detection_dataset(fx.dir / "synth" / "data.yaml").dataset;
    const auto& edited = content->images[0];
    bool found = false;
    for (const auto& img : on_disk.images)
        if (std::filesystem::equivalent(on_disk.root / img.path, edited.path)) {
            found = true;
            EXPECT_EQ(img.boxes.size(), edited.boxes.size());
            EXPECT_EQ(img.boxes.back().cls, 2);
        }
    EXPECT_TRUE(found);
    // Nothing changed since: nothing is written again.
    written = -1;
    QTest::keyClick(&editor, Qt::Key_S, Qt::ControlModifier);
    ASSERT_TRUE(uitest::wait_for([&] { return written >= 0; }));
    EXPECT_EQ(written, 0);
    // Other formats are not rewritten in place: the message says to export instead.
    fx.project->db().exec("UPDATE datasets SET format = 'coco'");
    try {
        store::write_labels_to_files(*fx.project, fx.dataset);
        ADD_FAILURE() << "a COCO dataset's labels were written as YOLO files";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("only YOLO and VOC label files"), std::string::npos)
            << e.what();
    }
}

TEST(DatasetView, ListsFiltersAndDecodesThumbnailsInTheBackground) {
    Fixture fx;
    auto content = std::make_shared<DatasetContent>(load_dataset_content(*fx.project, fx.dataset));
    DatasetView view(content, "shapes");
    view.resize(900, 600);
    view.show();
    EXPECT_EQ(view.model()->rowCount(), 9);
    view.set_filter(-1, "val");
    EXPECT_EQ(view.model()->rowCount(), 3);
    view.set_filter(-1, "");
    int with_class1 = 0;
    for (const auto& img : content->images)
        with_class1 += std::any_of(img.boxes.begin(), img.boxes.end(),
                                   [](const data::Box& b) { return b.cls == 1; });
    view.set_filter(1, "");
    EXPECT_EQ(view.model()->rowCount(), with_class1);
    view.set_filter(-1, "");
    // Painting asks for thumbnails; they arrive from the pool and land in the cache.
    ASSERT_TRUE(uitest::wait_for([&] { return view.cache()->decoded() == 9; }, 10000))
        << view.cache()->decoded();
    const QString first = QString::fromStdString(content->images[0].path.string());
    ASSERT_TRUE(view.cache()->contains(first));
    const QImage thumb = view.cache()->request(first);
    EXPECT_LE(thumb.width(), 160);
    EXPECT_LE(thumb.height(), 120);
    EXPECT_GT(thumb.width(), 0);
    // An unreadable file gets a tile, not a crash or a retry loop.
    EXPECT_TRUE(
        decode_thumbnail(QString::fromStdString((fx.dir / "missing.jpg").string()), QSize(64, 64))
            .isNull());
}

// 1-9 pick a class (and give it to the selected box), Space marks the image verified; both are
// kept in the project.
TEST(AnnotationEditor, NumberKeysPickClassesAndSpaceMarksVerified) {
    Fixture fx;
    auto content = std::make_shared<DatasetContent>(load_dataset_content(*fx.project, fx.dataset));
    auto editor_ptr = fx.open_editor(content);
    AnnotationEditor& editor = *editor_ptr;
    ASSERT_TRUE(editor.image_loaded());
    editor.canvas()->setFocus();
    editor.add_box({0, 0.5, 0.5, 0.25, 0.25});
    const int box = static_cast<int>(editor.boxes().size()) - 1;
    ASSERT_EQ(editor.selected(), box);
    QTest::keyClick(editor.canvas(), Qt::Key_3);
    EXPECT_EQ(editor.current_class(), 2);
    EXPECT_EQ(store::read_image_boxes(*fx.project, content->images[0].id)[box].cls, 2);
    QTest::keyClick(editor.canvas(), Qt::Key_9);  // only 3 classes: nothing changes
    EXPECT_EQ(editor.current_class(), 2);

    EXPECT_FALSE(editor.verified());
    QTest::keyClick(editor.canvas(), Qt::Key_Space);
    EXPECT_TRUE(editor.verified());
    EXPECT_EQ(store::export_dataset(*fx.project, fx.dataset).images[0].tags.at(store::kVerifiedTag),
              "yes");
    editor.open_image(1);
    EXPECT_FALSE(editor.verified());
    editor.open_image(0);
    EXPECT_TRUE(editor.verified());
    QTest::keyClick(editor.canvas(), Qt::Key_Space);
    EXPECT_EQ(
        store::export_dataset(*fx.project, fx.dataset).images[0].tags.count(store::kVerifiedTag),
        0u);
}

// The tab of an editor whose edits the label files lack says so ("*") until Ctrl+S; closing it
// then asks, and "Save" writes the files.
TEST(AnnotationEditor, UnwrittenEditsAreMarkedAndWrittenOnClose) {
    Fixture fx;
    MainWindow window;
    ASSERT_TRUE(fx.open_in(window));
    AnnotationEditor* editor = window.open_annotation(fx.dataset, 0);
    ASSERT_NE(editor, nullptr);
    ASSERT_TRUE(uitest::wait_for([&] { return editor->image_loaded(); }));
    const int tab = window.tabs()->indexOf(editor);
    EXPECT_FALSE(window.tabs()->tabText(tab).endsWith(" *"));
    editor->add_box({1, 0.4, 0.4, 0.2, 0.2});
    EXPECT_TRUE(editor->has_unwritten_edits());
    EXPECT_TRUE(window.tabs()->tabText(tab).endsWith(" *"));
    int written = -1;
    QObject::connect(editor, &AnnotationEditor::labels_written, [&](int n) { written = n; });
    QTest::keyClick(editor->canvas(), Qt::Key_S, Qt::ControlModifier);
    ASSERT_TRUE(uitest::wait_for([&] { return written >= 0; }));
    EXPECT_FALSE(window.tabs()->tabText(tab).endsWith(" *"));

    editor->add_box({2, 0.7, 0.7, 0.1, 0.1});
    const std::size_t boxes = editor->boxes().size();
    const auto image = editor->content()->images[0].path;
    const auto label = data::yolo_label_path(image);
    const auto before = read_file_bytes(label);
    uitest::answer_next_message_box(QMessageBox::Cancel);
    emit window.tabs()->tabCloseRequested(tab);
    EXPECT_EQ(window.tabs()->indexOf(editor), tab);  // Cancel keeps the tab
    EXPECT_EQ(read_file_bytes(label), before);
    uitest::answer_next_message_box(QMessageBox::Save);
    emit window.tabs()->tabCloseRequested(tab);
    EXPECT_EQ(window.tabs()->indexOf(editor), -1);
    EXPECT_NE(read_file_bytes(label), before);
    EXPECT_EQ(data::parse_yolo_labels(read_file_bytes(label), "", 0).boxes.size(), boxes);
}

// The class editor's rename, merge and colour reach the open editor and the dataset's grid.
TEST(ClassEditor, RenameMergeAndColourReachTheOpenViews) {
    Fixture fx;
    MainWindow window;
    ASSERT_TRUE(fx.open_in(window));
    AnnotationEditor* editor = window.open_annotation(fx.dataset, 0);
    DatasetView* view = window.open_dataset(fx.dataset);
    ASSERT_TRUE(editor && view);
    editor->add_box({2, 0.5, 0.5, 0.2, 0.2});
    ASSERT_TRUE(editor->undo_stack()->canUndo());
    const auto version = store::get_dataset(*window.project(), fx.dataset).version_hash;

    ClassEditor classes(*window.project(), fx.dataset, &window);
    QObject::connect(&classes, &ClassEditor::changed, [&] { window.reload_dataset(fx.dataset); });
    ASSERT_EQ(classes.list()->count(), 3);
    EXPECT_TRUE(classes.rename_class(0, "  disc "));  // trimmed
    EXPECT_EQ(editor->content()->class_names[0], "disc");
    EXPECT_TRUE(classes.list()->item(0)->text().startsWith("disc · "));
    EXPECT_FALSE(editor->undo_stack()->canUndo());  // its boxes named the old classes
    EXPECT_FALSE(classes.rename_class(1, "disc"));  // a clash is refused, nothing changes
    const auto boxes_of_2 = store::class_box_counts(*window.project(), fx.dataset)[2];
    const auto boxes_of_0 = store::class_box_counts(*window.project(), fx.dataset)[0];
    EXPECT_TRUE(classes.merge_class(2, 0));
    EXPECT_EQ(view->content()->class_names.size(), 2u);
    EXPECT_EQ(store::class_box_counts(*window.project(), fx.dataset)[0], boxes_of_0 + boxes_of_2);
    EXPECT_EQ(editor->boxes().back().cls, 0);  // the new box moved with its class
    EXPECT_TRUE(classes.add_class("star"));
    EXPECT_EQ(classes.list()->count(), 3);
    EXPECT_TRUE(classes.set_color(1, QColor(255, 0, 0)));
    EXPECT_EQ(editor->content()->class_colors[1], "#ff0000");
    EXPECT_EQ(class_color(1, editor->content()->class_colors), QColor(255, 0, 0));
    EXPECT_NE(store::get_dataset(*window.project(), fx.dataset).version_hash, version);
    EXPECT_TRUE(editor->has_unwritten_edits());
}

// The Dataset picker offers the datasets of the task's kind: detection datasets to a detection
// task, chat datasets to an LLM task; a schema that names no kind (an older agent) gets all.
TEST(RunSetupView, DatasetPickerOffersOnlyTheTasksKind) {
    Fixture fx;
    const auto chat = store::create_chat_dataset(
        *fx.project, "dialogues",
        {Json{{"messages", Json::array({{{"role", "user"}, {"content", "hi"}}})}}});
    auto schema = [](const char* id, const char* kind) {
        OptionSchema s(id, id);
        s.add(option_spec("data", OptionType::Path, "", "training data"));
        Json j = s.to_json();
        if (kind) j["dataset_kind"] = kind;
        return j;
    };
    RunSetupView view(fx.project.get(),
                      Json::array({schema("detect.yolo", "detection"), schema("llm.lora", "chat"),
                                   schema("old.task", nullptr)}));
    auto offered = [&] {
        std::vector<qlonglong> ids;
        auto* picker = view.findChild<QComboBox*>(QStringLiteral("dataset"));
        for (int i = 1; i < picker->count(); ++i)
            ids.push_back(picker->itemData(i).toLongLong());
        return ids;
    };
    auto* task = view.findChild<QComboBox*>(QStringLiteral("task"));
    ASSERT_NE(task, nullptr);
    task->setCurrentIndex(0);
    EXPECT_EQ(offered(), std::vector<qlonglong>{fx.dataset});
    task->setCurrentIndex(1);
    EXPECT_EQ(offered(), std::vector<qlonglong>{chat});
    // A chat dataset trains from its JSONL snapshot: `data` is filled, nothing to type.
    auto* data = qobject_cast<QLineEdit*>(view.form()->editor("data"));
    ASSERT_TRUE(uitest::wait_for([&] { return data->text().endsWith("data.jsonl"); }))
        << data->text().toStdString() << " " << view.error_text().toStdString();
    EXPECT_EQ(data->text().toStdString(), path_to_utf8(store::snapshot_dataset(*fx.project, chat)));
    task->setCurrentIndex(2);
    EXPECT_EQ(offered(), (std::vector<qlonglong>{fx.dataset, chat}));
}

// Ctrl+S after a class edit: the label files' class ids and data.yaml's names change together, so
// the dataset on disk reads back as the studio shows it.
TEST(AnnotationEditor, LabelFilesAndDataYamlNamesChangeTogether) {
    Fixture fx;
    const auto before = data::load_detection_dataset(fx.dir / "synth" / "data.yaml").dataset;
    ASSERT_EQ(before.class_names.size(), 3u);
    store::rename_class(*fx.project, fx.dataset, 0, "disc");
    store::merge_class(*fx.project, fx.dataset, 2, 1);  // class 2's boxes become class 1
    EXPECT_GT(store::write_labels_to_files(*fx.project, fx.dataset), 0u);
    const auto after = data::load_detection_dataset(fx.dir / "synth" / "data.yaml");
    EXPECT_EQ(after.dataset.class_names, (std::vector<std::string>{"disc", before.class_names[1]}));
    EXPECT_EQ(after.dropped_images, 0u);  // no label names a class the yaml lacks
    const auto project_view = store::export_dataset(*fx.project, fx.dataset);
    std::size_t boxes = 0, boxes_on_disk = 0;
    for (const auto& image : project_view.images)
        boxes += image.boxes.size();
    for (const auto& image : after.dataset.images) {
        boxes_on_disk += image.boxes.size();
        for (const auto& b : image.boxes)
            EXPECT_LT(b.cls, 2);
    }
    EXPECT_EQ(boxes_on_disk, boxes);
    // Written once: nothing changed since.
    EXPECT_EQ(store::write_labels_to_files(*fx.project, fx.dataset), 0u);
}

// A VOC dataset's edits reach its .xml files too (Ctrl+S's store call), and the unwritten mark
// applies to it.
TEST(AnnotationEditor, VocDatasetsGetTheirEditsWrittenBack) {
    Fixture fx;
    data::save_detection_dataset(
        data::load_detection_dataset(fx.dir / "synth" / "data.yaml").dataset, fx.dir / "voc",
        data::DatasetFormat::Voc);
    store::ImportOptions io;
    io.name = "shapes voc";
    const auto voc = store::import_dataset_from(*fx.project, fx.dir / "voc", "voc", io).dataset_id;
    auto content = load_dataset_content(*fx.project, voc);
    EXPECT_EQ(content.format, "voc");
    const auto edited_image = content.images[0];
    store::save_image_boxes(*fx.project, voc, edited_image.id, {{1, 0.5, 0.5, 0.25, 0.25}});
    EXPECT_EQ(store::write_labels_to_files(*fx.project, voc), 1u);
    const auto on_disk = data::load_detection_dataset(fx.dir / "voc").dataset;
    bool found = false;
    for (const auto& image : on_disk.images)
        if (std::filesystem::equivalent(
                image.path.is_absolute() ? image.path : on_disk.root / image.path,
                edited_image.path)) {
            found = true;
            ASSERT_EQ(image.boxes.size(), 1u);
            EXPECT_EQ(on_disk.class_names[static_cast<std::size_t>(image.boxes[0].cls)],
                      content.class_names[1]);
            EXPECT_NEAR(image.boxes[0].w, 0.25, 1e-6);
        }
    EXPECT_TRUE(found);
    EXPECT_EQ(store::write_labels_to_files(*fx.project, voc), 0u);
}
