// crucible-studio: the desktop studio (DESIGN.md "Processes"). Thin wiring over ui/:
//   crucible-studio [PROJECT.crucible] [--demo [--demo-dir] FOLDER] [--theme light|dark]
//                   [--screenshots DIR] [--quit-after MS]
// --demo creates (once) and opens a demo project with a synthetic dataset and an example run.
// Task schemas come from `crucible-worker describe` when a worker is installed next to the
// studio (or from a server when one is connected); the studio itself never links LibTorch.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QEventLoop>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QTabWidget>
#include <QTimer>
#include <QTreeWidget>
#include <cstdio>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/log.h"
#include "core/store/dataset_store.h"
#include "core/store/run_store.h"
#include "ui/annotation_editor.h"
#include "ui/background.h"
#include "ui/beside_studio.h"
#include "ui/class_editor.h"
#include "ui/demo_project.h"
#include "ui/drill_down.h"
#include "ui/main_window.h"
#include "ui/predict_preview.h"
#include "ui/run_monitor.h"
#include "ui/theme.h"

namespace {

// Reads the task schemas in the background of the event loop (QProcess is asynchronous).
void load_task_schemas(crucible::ui::MainWindow& window) {
    const QString worker = crucible::ui::find_beside_studio(QStringLiteral("crucible-worker"),
                                                            QStringLiteral("worker"));
    if (worker.isEmpty()) {
        window.log(QString(crucible::log_level_name(crucible::LogLevel::Info)),
                   QObject::tr("crucible-worker not found next to the studio: task schemas come "
                               "from a server"));
        return;
    }
    auto* process = new QProcess(&window);
    QObject::connect(process, &QProcess::finished, &window, [&window, process](int code) {
        process->deleteLater();
        if (code != 0) {
            window.log(QString(crucible::log_level_name(crucible::LogLevel::Warning)),
                       QObject::tr("crucible-worker describe failed"));
            return;
        }
        try {
            auto json = crucible::parse_json(process->readAllStandardOutput().toStdString(),
                                             "crucible-worker describe");
            window.set_task_schemas(json.value("tasks", crucible::Json::array()));
            window.set_worker_description(json);
        } catch (const std::exception& e) {
            window.log(QString(crucible::log_level_name(crucible::LogLevel::Warning)),
                       QString::fromUtf8(e.what()));
        }
    });
    process->start(worker, {QStringLiteral("describe")});
}

// The screenshots' predict preview: weights a headless demo trained (CRUCIBLE_PREVIEW_WEIGHTS,
// set by installer/scripts/screenshots.sh) on the demo dataset's validation pictures, waited for.
void open_screenshot_preview(crucible::ui::MainWindow& window) {
    const QString weights = qEnvironmentVariable("CRUCIBLE_PREVIEW_WEIGHTS");
    auto* project = window.project();
    if (weights.isEmpty() || !project) return;
    const auto runs = crucible::store::list_runs(*project);
    const auto data = crucible::store::export_dataset(
        *project, crucible::store::list_datasets(*project).front().id);
    std::vector<std::filesystem::path> images;
    for (const auto& image : data.images)
        if (image.split == "val" && images.size() < 6)
            images.push_back(image.path.is_absolute() ? image.path : data.root / image.path);
    auto* preview = window.open_predict_preview(runs.front().id, images,
                                                crucible::path_from_utf8(weights.toStdString()));
    if (!preview) return;
    QEventLoop wait;
    QObject::connect(preview, &crucible::ui::PredictPreview::done, &wait, &QEventLoop::quit);
    QTimer::singleShot(120000, &wait, &QEventLoop::quit);
    if (!preview->finished()) wait.exec();

    // Model-assisted labelling: the same weights' suggestions on a validation image, the most
    // confident one highlighted.
    auto* editor = window.open_annotation(crucible::store::list_datasets(*project).front().id, 0);
    if (!editor) return;
    for (int i = 0; i < static_cast<int>(editor->content()->images.size()); ++i)
        if (editor->content()->images[static_cast<std::size_t>(i)].split == "val") {
            editor->open_image(i);
            break;
        }
    QEventLoop labelled;
    QObject::connect(editor, &crucible::ui::AnnotationEditor::prelabel_finished, &labelled,
                     &QEventLoop::quit);
    QTimer::singleShot(120000, &labelled, &QEventLoop::quit);
    editor->prelabel(window.command_line(), crucible::path_from_utf8(weights.toStdString()),
                     crucible::ui::AnnotationEditor::PrelabelScope::CurrentImage,
                     {QStringLiteral("imgsz=160")});  // the headless demo's size
    labelled.exec();

    // Drill-down: the same weights' per-image report on the demo dataset, the images behind
    // class 0 (worst first).
    const auto report =
        std::filesystem::temp_directory_path() / "crucible-screenshot-per-image.json";
    QProcess val;
    val.start(
        window.command_line(),
        {QStringLiteral("val"), QStringLiteral("detect"), QStringLiteral("model=") + weights,
         QStringLiteral("data=") +
             QString::fromStdString(crucible::path_to_utf8(crucible::store::snapshot_dataset(
                 *project, crucible::store::list_datasets(*project).front().id))),
         QStringLiteral("imgsz=160"),
         QStringLiteral("per_image=") + QString::fromStdString(crucible::path_to_utf8(report))});
    if (!val.waitForFinished(120000) || val.exitCode() != 0) return;
    crucible::ui::DrillFilter filter;
    filter.cls = 0;
    window.open_drill_down(runs.front().id, report, filter);
}

void take_screenshots(crucible::ui::MainWindow& window, const QString& dir) {
    QDir().mkpath(dir);
    QTabWidget* tabs = window.tabs();
    for (int i = 0; i < tabs->count(); ++i) {
        tabs->setCurrentIndex(i);
        if (auto* m = qobject_cast<crucible::ui::RunMonitor*>(tabs->widget(i))) m->redraw_now();
        // Let background work (thumbnails, image loads) arrive before the picture is taken.
        QEventLoop wait;
        QTimer::singleShot(800, &wait, &QEventLoop::quit);
        wait.exec();
        QString name = tabs->tabText(i).toLower();
        name.replace(QRegularExpression(QStringLiteral("[^a-z0-9]+")), QStringLiteral("_"));
        name.remove(QRegularExpression(QStringLiteral("^_+|_+$")));
        window.grab().save(QDir(dir).filePath(QStringLiteral("%1_%2.png").arg(i).arg(name)));
    }
}

int studio_main(int argc, char** argv) {
    QApplication app(argc, argv);
    QCoreApplication::setOrganizationName(QStringLiteral("Crucible"));
    QCoreApplication::setApplicationName(QStringLiteral("Crucible Studio"));
    QCoreApplication::setApplicationVersion(QStringLiteral(CRUCIBLE_VERSION));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Crucible desktop training studio"));
    parser.addHelpOption();
    parser.addVersionOption();
    QCommandLineOption demo(QStringLiteral("demo"),
                            QStringLiteral("create and open the demo project"));
    QCommandLineOption demo_dir(QStringLiteral("demo-dir"),
                                QStringLiteral("folder of the demo project"),
                                QStringLiteral("folder"));
    QCommandLineOption theme(QStringLiteral("theme"), QStringLiteral("light or dark"),
                             QStringLiteral("name"));
    QCommandLineOption shots(QStringLiteral("screenshots"),
                             QStringLiteral("write PNGs of the main views to a folder and quit"),
                             QStringLiteral("folder"));
    QCommandLineOption quit_after(QStringLiteral("quit-after"),
                                  QStringLiteral("quit after this many milliseconds"),
                                  QStringLiteral("ms"));
    parser.addOptions({demo, demo_dir, theme, shots, quit_after});
    parser.addPositionalArgument(QStringLiteral("project"), QStringLiteral("project file"));
    parser.process(app);

    crucible::ui::MainWindow window;
    const crucible::ui::Theme t =
        parser.isSet(theme) ? crucible::ui::theme_from_name(parser.value(theme)) : window.theme();
    window.set_theme(t);
    load_task_schemas(window);

    crucible::ui::DemoOptions demo_options;
    demo_options.task = "detect.yolo";  // the demo's runs open as detection runs
    window.set_demo_options(demo_options);
    if (parser.isSet(demo)) {
        // `--demo FOLDER` reads as --demo-dir FOLDER rather than dropping the folder.
        QString folder = parser.value(demo_dir);
        if (folder.isEmpty() && !parser.positionalArguments().isEmpty())
            folder = parser.positionalArguments().front();
        window.open_demo(folder);
    } else if (!parser.positionalArguments().isEmpty()) {
        window.open_project(parser.positionalArguments().front());
    } else if (!window.recent_projects().isEmpty() &&
               QFileInfo::exists(window.recent_projects().front())) {
        window.open_project(window.recent_projects().front());
    }
    window.show();

    if (parser.isSet(shots)) {
        const QString dir = parser.value(shots);
        window.resize(1400, 860);
        QTimer::singleShot(1500, &window, [&window, dir] {
            if (auto* project = window.project()) {
                // Every main view gets a tab: dataset and run (opened above), the annotation
                // editor on the first image, the run setup, the run table and the welcome page.
                const auto datasets = crucible::store::list_datasets(*project);
                if (!datasets.empty()) window.open_annotation(datasets.front().id, 0);
                window.open_run_setup();
                window.open_run_table();
                open_screenshot_preview(window);
            }
            window.show_welcome();
            QApplication::processEvents();
            take_screenshots(window, dir);
            if (auto* project = window.project()) {
                // The class editor is a dialog: its own picture.
                const auto datasets = crucible::store::list_datasets(*project);
                if (!datasets.empty()) {
                    crucible::ui::ClassEditor classes(*project, datasets.front().id, &window);
                    classes.show();
                    QApplication::processEvents();
                    classes.grab().save(QDir(dir).filePath(
                        QStringLiteral("%1_classes.png").arg(window.tabs()->count())));
                }
            }
            QApplication::quit();
        });
    }
    if (parser.isSet(quit_after))
        QTimer::singleShot(parser.value(quit_after).toInt(), &app, &QApplication::quit);
    const int code = app.exec();
    // The windows are gone; background calls to a stalled agent must not keep the process (and
    // the project's lock) alive for their read timeout.
    crucible::ui::end_background_work();
    return code;
}

}  // namespace

int main(int argc, char** argv) {
    return crucible::run_at_boundary("crucible-studio", &studio_main, argc, argv);
}
