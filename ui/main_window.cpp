#include "ui/main_window.h"

#include <QAbstractButton>
#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProcess>
#include <QProgressDialog>
#include <QSettings>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QTreeWidget>
#include <QTreeWidgetItemIterator>
#include <QUrl>
#include <algorithm>
#include <optional>

#include "core/base/file_io.h"
#include "core/base/job_state.h"
#include "core/base/log.h"
#include "core/base/secret_store.h"
#include "core/data/per_image_report.h"
#include "core/net/loopback.h"
#include "core/store/dataset_edit.h"
#include "core/store/dataset_store.h"
#include "core/store/project.h"
#include "core/store/tidy_csv.h"
#include "ui/annotation_editor.h"
#include "ui/background.h"
#include "ui/beside_studio.h"
#include "ui/class_editor.h"
#include "ui/dataset_view.h"
#include "ui/drill_down.h"
#include "ui/local_agent.h"
#include "ui/log_console.h"
#include "ui/predict_preview.h"
#include "ui/remote_predict.h"
#include "ui/run_files.h"
#include "ui/run_monitor.h"
#include "ui/run_setup.h"
#include "ui/run_table.h"
#include "ui/server_access.h"
#include "ui/welcome_page.h"

namespace crucible::ui {

namespace {

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}
std::filesystem::path to_path(const QString& s) {
    return path_from_utf8(s.toStdString());
}
QString from_path(const std::filesystem::path& p) {
    return qs(path_to_utf8(p));
}

constexpr int kMaxRecent = 8;

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(tr("Crucible Studio"));
    setAcceptDrops(true);
    resize(1280, 800);

    tree_ = new QTreeWidget(this);
    tree_->setHeaderHidden(true);
    tree_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    tree_->setMinimumWidth(200);
    tree_->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(tree_, &QTreeWidget::itemActivated, this,
            [this](QTreeWidgetItem* item, int) { on_tree_activated(item); });
    connect(tree_, &QTreeWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
        QTreeWidgetItem* item = tree_->itemAt(pos);
        if (!item) return;
        QMenu menu;
        const QString kind = item->data(0, kKindRole).toString();
        if (kind == QLatin1String("run")) {
            menu.addAction(tr("Open monitor"), this, [this, item] { on_tree_activated(item); });
            menu.addAction(tr("Compare selected runs"), this, &MainWindow::compare_selected_runs);
            const auto id = item->data(0, kIdRole).toLongLong();
            menu.addAction(tr("Save weights…"), this, [this, id] { save_run_weights_asking(id); });
            menu.addAction(tr("Export ONNX…"), this, [this, id] { export_run_onnx_asking(id); });
            menu.addAction(tr("Clone…"), this, [this, id] { clone_run(id); });
            menu.addAction(tr("Predict preview…"), this,
                           [this, id] { predict_preview_asking(id); });
            menu.addAction(tr("Delete…"), this, [this, id] { delete_run_asking(id); });
        } else if (kind == QLatin1String("dataset")) {
            menu.addAction(tr("Open"), this, [this, item] { on_tree_activated(item); });
            const auto id = item->data(0, kIdRole).toLongLong();
            menu.addAction(tr("Annotate"), this, [this, id] { open_annotation(id, 0); });
            menu.addAction(tr("Edit classes…"), this, [this, id] { edit_classes(id); });
            menu.addAction(tr("Delete…"), this, [this, id] { delete_dataset_asking(id); });
        } else if (kind == QLatin1String("server")) {
            const QString name = item->data(0, kIdRole).toString();
            menu.addAction(tr("Check connection"), this, [this, name] { check_server(name); });
            menu.addAction(tr("Change token…"), this, [this, name] { change_server_token(name); });
            menu.addAction(tr("Change URL…"), this,
                           [this, name] { change_server_url_asking(name); });
            menu.addAction(tr("Remove…"), this, [this, name] { remove_server_asking(name); });
        }
        if (!menu.isEmpty()) menu.exec(tree_->viewport()->mapToGlobal(pos));
    });

    tabs_ = new QTabWidget(this);
    tabs_->setTabsClosable(true);
    tabs_->setMovable(true);
    tabs_->setDocumentMode(true);
    connect(tabs_, &QTabWidget::tabCloseRequested, this, [this](int i) {
        QWidget* w = tabs_->widget(i);
        if (auto* editor = qobject_cast<AnnotationEditor*>(w))
            if (!settle_unwritten_labels({editor})) return;
        tabs_->removeTab(i);
        w->deleteLater();
    });

    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(tree_);
    split->addWidget(tabs_);
    split->setStretchFactor(1, 1);
    split->setSizes({240, 1040});
    setCentralWidget(split);

    log_ = new LogConsole(this);
    log_dock_ = new QDockWidget(tr("Log"), this);
    log_dock_->setObjectName(QStringLiteral("log_dock"));
    log_dock_->setWidget(log_);
    addDockWidget(Qt::BottomDockWidgetArea, log_dock_);

    project_label_ = new QLabel(tr("no project"), this);
    connection_label_ = new QLabel(tr("no server"), this);
    gpu_label_ = new QLabel(tr("GPU: —"), this);
    statusBar()->addWidget(project_label_, 1);
    statusBar()->addPermanentWidget(connection_label_);
    statusBar()->addPermanentWidget(gpu_label_);

    build_menus();
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    theme_ = theme_from_name(settings.value(QStringLiteral("ui/theme")).toString());
    refresh_tree();
    show_welcome();  // opening a project closes it with the other tabs
}

MainWindow::~MainWindow() {
    // Widgets that refer to the project go before it.
    while (tabs_->count() > 0) {
        QWidget* w = tabs_->widget(0);
        tabs_->removeTab(0);
        delete w;
    }
}

void MainWindow::build_menus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&New project…"), QKeySequence::New, this, &MainWindow::new_project_asking);
    file->addAction(tr("&Open project…"), QKeySequence::Open, this,
                    &MainWindow::open_project_asking);
    recent_menu_ = file->addMenu(tr("Open &recent"));
    rebuild_recent_menu();
    file->addSeparator();
    file->addAction(tr("&Import dataset…"), QKeySequence(Qt::CTRL | Qt::Key_I), this,
                    &MainWindow::import_dataset_asking);
    file->addAction(tr("Open the &demo project"), this, [this] { open_demo(); });
    file->addAction(
        tr("Open &events file…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O), this, [this] {
            QString f =
                QFileDialog::getOpenFileName(this, tr("Events"), QString(), tr("events (*.jsonl)"));
            if (!f.isEmpty()) open_events_file(f);
        });
    file->addSeparator();
    file->addAction(tr("&Close tab"), QKeySequence(Qt::CTRL | Qt::Key_W), this, [this] {
        if (tabs_->currentIndex() >= 0) emit tabs_->tabCloseRequested(tabs_->currentIndex());
    });
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    QMenu* run = menuBar()->addMenu(tr("&Run"));
    run->addAction(tr("&New run…"), QKeySequence(Qt::CTRL | Qt::Key_R), this,
                   [this] { open_run_setup(); });
    run->addAction(tr("&Compare selected runs"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C),
                   this, &MainWindow::compare_selected_runs);
    run->addAction(tr("Run &table"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R), this,
                   [this] { open_run_table(); });

    QMenu* servers = menuBar()->addMenu(tr("&Servers"));
    servers->addAction(tr("Start this computer's &agent"), this, [this] { start_local_agent(); });
    servers->addAction(tr("&Add server…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_A), this,
                       &MainWindow::add_server_asking);
    servers->addAction(tr("&Check every server"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_H),
                       this, [this] {
                           for (const auto& s : list_servers())
                               check_server(qs(s.name));
                       });

    QMenu* view = menuBar()->addMenu(tr("&View"));
    QAction* dark = view->addAction(tr("&Dark theme"));
    dark->setCheckable(true);
    dark->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_T));
    connect(dark, &QAction::toggled, this,
            [this](bool on) { set_theme(on ? Theme::Dark : Theme::Light); });
    QAction* log_toggle = log_dock_->toggleViewAction();
    log_toggle->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_L));
    view->addAction(log_toggle);
    view->addAction(tr("&Refresh project"), QKeySequence::Refresh, this, &MainWindow::refresh_tree);
    view->addAction(tr("Next tab"), QKeySequence(Qt::CTRL | Qt::Key_Tab), this, [this] {
        if (tabs_->count() > 0)
            tabs_->setCurrentIndex((tabs_->currentIndex() + 1) % tabs_->count());
    });

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&Welcome page"), this, &MainWindow::show_welcome);
    help->addAction(tr("&Keyboard shortcuts"), QKeySequence::HelpContents, this, [this] {
        QMessageBox::information(this, tr("Keyboard shortcuts"), shortcuts_text());
    });
    help->addAction(tr("&About Crucible Studio"), this, [this] {
        QMessageBox::about(this, tr("About Crucible Studio"), about_text());
    });
}

void MainWindow::new_project_asking() {
    QString f = QFileDialog::getSaveFileName(this, tr("New project"), QString(),
                                             tr("Crucible project (*.crucible)"));
    if (f.isEmpty()) return;
    if (!f.endsWith(QStringLiteral(".crucible"))) f += QStringLiteral(".crucible");
    new_project(f);
}

void MainWindow::open_project_asking() {
    QString f = QFileDialog::getOpenFileName(this, tr("Open project"), QString(),
                                             tr("Crucible project (*.crucible)"));
    if (!f.isEmpty()) open_project(f);
}

void MainWindow::import_dataset_asking() {
    const QString folder = QFileDialog::getExistingDirectory(this, tr("Dataset folder"));
    if (folder.isEmpty()) return;
    if (!project_) {
        const QFileInfo info(folder);
        QString f = QFileDialog::getSaveFileName(
            this, tr("New project for %1").arg(info.fileName()),
            info.dir().filePath(info.fileName() + QStringLiteral(".crucible")),
            tr("Crucible project (*.crucible)"));
        if (f.isEmpty()) return;
        if (!f.endsWith(QStringLiteral(".crucible"))) f += QStringLiteral(".crucible");
        if (!new_project(f)) return;
    }
    import_dataset(folder);
}

bool MainWindow::open_demo(const QString& folder) {
    QString where = folder;
    if (where.isEmpty())
        where = QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) +
                QStringLiteral("/demo");
    std::filesystem::path file;
    try {
        file = ensure_demo_project(to_path(where), demo_options_);
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)),
            tr("cannot make the demo project in %1: %2").arg(where, QString::fromUtf8(e.what())));
        return false;
    }
    if (!open_project(from_path(file))) return false;
    const auto datasets = store::list_datasets(*project_);
    if (!datasets.empty()) open_dataset(datasets.front().id);
    const auto runs = store::list_runs(*project_);
    if (!runs.empty()) open_run(runs.front().id);
    return true;
}

void MainWindow::show_welcome() {
    for (int i = 0; i < tabs_->count(); ++i)
        if (qobject_cast<WelcomePage*>(tabs_->widget(i))) {
            tabs_->setCurrentIndex(i);
            return;
        }
    auto* page = new WelcomePage(recent_projects(), tabs_);
    // Queued: opening a project closes every tab, the page among them, which must not happen
    // while it is still inside its button's click.
    const auto queued = Qt::QueuedConnection;
    connect(page, &WelcomePage::new_project, this, &MainWindow::new_project_asking, queued);
    connect(page, &WelcomePage::open_project, this, &MainWindow::open_project_asking, queued);
    connect(
        page, &WelcomePage::open_demo, this, [this] { open_demo(); }, queued);
    connect(page, &WelcomePage::import_dataset, this, &MainWindow::import_dataset_asking, queued);
    connect(page, &WelcomePage::add_server, this, &MainWindow::add_server_asking, queued);
    connect(
        page, &WelcomePage::open_recent, this, [this](const QString& f) { open_project(f); },
        queued);
    add_tab(page, tr("Welcome"));
}

void MainWindow::add_server_asking() {
    QDialog dialog(this);
    dialog.setWindowTitle(tr("Add server"));
    auto* form = new QFormLayout(&dialog);
    auto* name = new QLineEdit(&dialog);
    auto* url = new QLineEdit(QStringLiteral("https://"), &dialog);
    auto* token = new QLineEdit(&dialog);
    token->setEchoMode(QLineEdit::Password);
    form->addRow(tr("Name"), name);
    form->addRow(tr("URL"), url);
    form->addRow(tr("Token"), token);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    form->addRow(buttons);
    connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    if (dialog.exec() == QDialog::Accepted)
        add_server(name->text().trimmed(), url->text().trimmed(), token->text());
}

QString MainWindow::shortcuts_text() const {
    QStringList lines;
    for (QAction* menu : menuBar()->actions()) {
        if (!menu->menu()) continue;
        for (QAction* a : menu->menu()->actions())
            if (!a->shortcut().isEmpty())
                lines << QStringLiteral("%1\t%2").arg(
                    a->shortcut().toString(QKeySequence::NativeText),
                    a->text().remove(QLatin1Char('&')));
    }
    lines << QString() << tr("Run monitor") << tr("Ctrl+Shift+P\tPause the run")
          << tr("Ctrl+Shift+U\tResume the run") << tr("Ctrl+Shift+X\tCancel the run") << QString()
          << tr("Annotation editor")
          << tr("W\tNew box · Del\tDelete the box · A / D\tPrevious / next image")
          << tr("1-9\tPick a class (and give it to the selected box) · Space\tVerified")
          << tr("Ctrl+Z / Ctrl+Y\tUndo / redo · Ctrl+S\tWrite the dataset's label files");
    return lines.join(QLatin1Char('\n'));
}

void MainWindow::set_worker_description(const Json& describe) {
    worker_ = describe.is_object() ? describe : Json();
    if (worker_.is_object()) worker_.erase("tasks");
}

QString MainWindow::about_text() const {
    QString text = tr("Crucible Studio %1\nQt %2\n\n")
                       .arg(QStringLiteral(CRUCIBLE_VERSION), QString::fromLatin1(qVersion()));
    if (worker_.is_object())
        text += tr("Training on this computer: crucible-worker %1, LibTorch %2, CUDA runtime %3")
                    .arg(qs(worker_.value("version", std::string("?"))),
                         qs(worker_.value("libtorch", std::string("?"))),
                         qs(worker_.value("cuda_runtime", std::string("?"))));
    else
        text += tr("No crucible-worker next to the studio: training runs on servers.");
    text += QStringLiteral("\n");
    text += local_agent_ && local_agent_->ready()
                ? tr("This computer's agent: running at %1").arg(qs(local_agent_->endpoint().url))
                : tr("This computer's agent: not started (Servers ▸ Start this computer's agent)");
    return text;
}

void MainWindow::set_theme(Theme theme) {
    theme_ = theme;
    if (auto* app = qobject_cast<QApplication*>(QCoreApplication::instance()))
        apply_theme(*app, theme);
    QSettings().setValue(QStringLiteral("ui/theme"), theme_name(theme));
}

void MainWindow::log(const QString& level, const QString& message) {
    log_->append_line(level, message);
    if (level == QLatin1String("error")) statusBar()->showMessage(message, 8000);
}

QStringList MainWindow::recent_projects() const {
    return QSettings().value(QStringLiteral("recent/projects")).toStringList();
}

void MainWindow::add_recent(const QString& file) {
    QStringList list = recent_projects();
    const QString abs = QFileInfo(file).absoluteFilePath();
    list.removeAll(abs);
    list.prepend(abs);
    while (list.size() > kMaxRecent)
        list.removeLast();
    QSettings().setValue(QStringLiteral("recent/projects"), list);
    rebuild_recent_menu();
}

void MainWindow::rebuild_recent_menu() {
    recent_menu_->clear();
    const QStringList list = recent_projects();
    for (int i = 0; i < list.size(); ++i) {
        const QString f = list[i];
        QAction* a = recent_menu_->addAction(QStringLiteral("&%1 %2").arg(i + 1).arg(f), this,
                                             [this, f] { open_project(f); });
        a->setEnabled(QFileInfo::exists(f));
    }
    recent_menu_->setEnabled(!list.isEmpty());
}

std::vector<AnnotationEditor*> MainWindow::annotation_editors() const {
    std::vector<AnnotationEditor*> editors;
    for (int i = 0; i < tabs_->count(); ++i)
        if (auto* e = qobject_cast<AnnotationEditor*>(tabs_->widget(i))) editors.push_back(e);
    return editors;
}

bool MainWindow::open_project(const QString& file) {
    if (!settle_unwritten_labels(annotation_editors())) return false;
    try {
        auto p = store::Project::open(to_path(file));
        close_project();
        project_ = std::move(p);
        if (!project_->stale_lock_taken_over().empty())
            log(QString(log_level_name(LogLevel::Warning)),
                tr("took over the lock of %1").arg(qs(project_->stale_lock_taken_over())));
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)),
            tr("cannot open %1: %2").arg(file, QString::fromUtf8(e.what())));
        return false;
    }
    add_recent(file);
    log(QString(log_level_name(LogLevel::Info)), tr("opened %1").arg(file));
    try {
        for (const auto& line : import_project_servers(*project_))
            log(QString(log_level_name(LogLevel::Info)), qs(line));
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)),
            tr("the project's servers were not moved to your server list: %1")
                .arg(QString::fromUtf8(e.what())));
    }
    refresh_tree();
    // Deletions a closed studio left unfinished go on.
    try {
        for (const auto& run : store::list_runs(*project_))
            if (run.setup.state == store::kDeletingState) deleting_runs_.push_back(run.id);
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
    }
    delete_runs_in_slices();
    return true;
}

bool MainWindow::new_project(const QString& file) {
    if (!settle_unwritten_labels(annotation_editors())) return false;
    try {
        auto p = store::Project::create(to_path(file));
        close_project();
        project_ = std::move(p);
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)),
            tr("cannot create %1: %2").arg(file, QString::fromUtf8(e.what())));
        return false;
    }
    add_recent(file);
    log(QString(log_level_name(LogLevel::Info)), tr("created %1").arg(file));
    refresh_tree();
    return true;
}

void MainWindow::close_project() {
    while (tabs_->count() > 0) {
        QWidget* w = tabs_->widget(0);
        tabs_->removeTab(0);
        delete w;
    }
    contents_.clear();
    deleting_runs_.clear();  // marked in the project: the next open finishes them
    project_.reset();
    refresh_tree();
}

void MainWindow::set_task_schemas(const Json& tasks) {
    tasks_ = tasks.is_array() ? tasks : Json::array();
    log(QString(log_level_name(LogLevel::Info)),
        tr("%1 task schemas available").arg(tasks_.size()));
}

QString MainWindow::status_text() const {
    return project_label_->text() + QStringLiteral(" | ") + connection_label_->text() +
           QStringLiteral(" | ") + gpu_label_->text();
}

namespace {

// "name [state]", as the tree lists a run.
QString run_item_text(const store::RunInfo& run) {
    return QString::fromStdString(run.setup.name + " [" + run.setup.state + "]");
}

}  // namespace

void MainWindow::refresh_tree() {
    tree_->clear();
    if (!project_) {
        project_label_->setText(tr("no project — File ▸ Open or drop a dataset folder"));
        setWindowTitle(tr("Crucible Studio"));
        return;
    }
    const QString name = from_path(project_->path().filename());
    setWindowTitle(tr("%1 — Crucible Studio").arg(name));
    project_label_->setText(from_path(project_->path()));
    auto* datasets = new QTreeWidgetItem(tree_, {tr("Datasets")});
    auto* runs = new QTreeWidgetItem(tree_, {tr("Runs")});
    runs->setData(0, kKindRole, QStringLiteral("runs"));
    runs->setToolTip(0, tr("Open the run table (Ctrl+Shift+R)"));
    auto* servers = new QTreeWidgetItem(tree_, {tr("Servers")});
    try {
        for (const auto& d : store::list_datasets(*project_)) {
            auto* item = new QTreeWidgetItem(
                datasets, {qs(d.name) + tr(" (%1 images, %2 boxes)").arg(d.images).arg(d.boxes)});
            item->setData(0, kKindRole, QStringLiteral("dataset"));
            item->setData(0, kIdRole, QVariant::fromValue<qlonglong>(d.id));
            item->setToolTip(
                0, qs(d.kind + " · " + d.format + " · version " + d.version_hash.substr(0, 12)));
        }
        for (const auto& r : store::list_runs(*project_)) {
            auto* item = new QTreeWidgetItem(runs, {run_item_text(r)});
            item->setData(0, kKindRole, QStringLiteral("run"));
            item->setData(0, kIdRole, QVariant::fromValue<qlonglong>(r.id));
            item->setToolTip(0, tr("%1 · %2 events").arg(qs(r.setup.task)).arg(r.events));
        }
        for (const auto& s : list_servers()) {
            auto* item =
                new QTreeWidgetItem(servers, {qs(s.name) + QStringLiteral(" — ") + qs(s.url)});
            item->setData(0, kKindRole, QStringLiteral("server"));
            item->setData(0, kIdRole, qs(s.name));
        }
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
    }
    tree_->expandAll();
    refresh_run_tables();
}

void MainWindow::refresh_run_tables() {
    for (int i = 0; i < tabs_->count(); ++i) {
        auto* table = qobject_cast<RunTableView*>(tabs_->widget(i));
        if (!table) continue;
        if (!project_) {
            table->set_runs({}, {});
            continue;
        }
        try {
            std::map<std::int64_t, QString> datasets;
            for (const auto& d : store::list_datasets(*project_))
                datasets[d.id] = qs(d.name);
            table->set_runs(store::summarize_runs(*project_), std::move(datasets));
        } catch (const std::exception& e) {
            log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
        }
    }
}

RunTableView* MainWindow::open_run_table() {
    if (!project_) return nullptr;
    for (int i = 0; i < tabs_->count(); ++i)
        if (auto* table = qobject_cast<RunTableView*>(tabs_->widget(i))) {
            tabs_->setCurrentIndex(i);
            refresh_run_tables();
            return table;
        }
    auto* table = new RunTableView(tabs_);
    connect(table, &RunTableView::open_runs, this,
            [this](const std::vector<std::int64_t>& ids) { open_runs(ids); });
    connect(table, &RunTableView::refresh_requested, this, &MainWindow::refresh_run_tables);
    connect(table, &RunTableView::clone_requested, this,
            [this](std::int64_t id) { clone_run(id); });
    connect(table, &RunTableView::preview_requested, this,
            [this](std::int64_t id) { predict_preview_asking(id); });
    connect(table, &RunTableView::save_weights_requested, this,
            [this](std::int64_t id) { save_run_weights_asking(id); });
    connect(table, &RunTableView::delete_requested, this,
            [this](std::int64_t id) { delete_run_asking(id); });
    connect(table, &RunTableView::export_onnx_requested, this,
            [this](std::int64_t id) { export_run_onnx_asking(id); });
    connect(table, &RunTableView::export_csv_requested, this,
            [this](const std::vector<std::int64_t>& ids) { export_runs_csv_asking(ids); });
    add_tab(table, tr("Runs"));
    refresh_run_tables();
    return table;
}

void MainWindow::on_tree_activated(QTreeWidgetItem* item) {
    const QString kind = item->data(0, kKindRole).toString();
    const auto id = static_cast<std::int64_t>(item->data(0, kIdRole).toLongLong());
    if (kind == QLatin1String("dataset"))
        open_dataset(id);
    else if (kind == QLatin1String("run"))
        open_run(id);
    else if (kind == QLatin1String("runs"))
        open_run_table();
    else if (kind == QLatin1String("server"))
        check_server(item->data(0, kIdRole).toString());
}

int MainWindow::add_tab(QWidget* widget, const QString& title) {
    int i = tabs_->addTab(widget, title);
    tabs_->setCurrentIndex(i);
    return i;
}

net::RemoteEndpoint MainWindow::endpoint_for(const net::RemoteEntry& server) const {
    try {
        return net::endpoint_for(server);
    } catch (const std::exception& e) {
        log_->append_line(
            QString(log_level_name(LogLevel::Warning)),
            tr("no token for %1: %2").arg(qs(server.url), QString::fromUtf8(e.what())));
    }
    return {server.url, "", server.fingerprint};
}

RunMonitor* MainWindow::open_run(std::int64_t run_id) {
    return open_runs({run_id});
}

void MainWindow::keep_events(std::int64_t run_id, const std::vector<Event>& events) {
    if (!project_) return;
    try {
        store::append_events(*project_, run_id, events);
        const bool status = std::any_of(events.begin(), events.end(), [](const Event& e) {
            return e.kind == event_kind::kStatus;
        });
        if (!status) return;
        const store::RunInfo info = store::get_run(*project_, run_id);
        for (QTreeWidgetItemIterator it(tree_); *it; ++it)
            if ((*it)->data(0, kKindRole) == QStringLiteral("run") &&
                (*it)->data(0, kIdRole).toLongLong() == run_id)
                (*it)->setText(0, run_item_text(info));
        // An ended run's files come beside the project now, while its agent has them.
        if (const auto state = try_parse_job_state(info.setup.state);
            state && is_final_state(*state))
            keep_run_files(run_id);
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
    }
}

RunMonitor* MainWindow::open_runs(const std::vector<std::int64_t>& run_ids) {
    if (!project_ || run_ids.empty()) return nullptr;
    auto* monitor = new RunMonitor(tabs_);
    QStringList names;
    try {
        for (auto id : run_ids) {
            const store::RunInfo info = store::get_run(*project_, id);
            const QString name = qs(info.setup.name);
            names << name;
            const int index = monitor->add_store_run(*project_, id, name);
            const bool on_agent = !info.setup.remote_job_id.empty();
            const bool ended =
                is_final_state(try_parse_job_state(info.setup.state).value_or(JobState::Queued));
            if (run_ids.size() == 1 && on_agent && info.setup.server.empty()) {
                // A run of this computer's agent: followed now, or once the agent is up (it
                // starts on demand; a studio opened again adopts the agent still training).
                local_follows_.push_back({monitor, index, id, {}});
                if (local_agent_ && local_agent_->ready())
                    follow_local_runs();
                else if (!ended)
                    start_local_agent();
            } else if (run_ids.size() == 1 && on_agent) {
                // Live: new events are kept in the project and drawn.
                if (const auto place = run_place(info))
                    monitor->follow_remote(
                        index, place->endpoint, qs(place->job), info.last_seq,
                        [this, id](const std::vector<Event>& events) { keep_events(id, events); });
            }
            // An ended run reads its files where they are kept beside the project (offline
            // too); when they are not there yet they are fetched now.
            const auto files = store::run_files_folder(*project_, id);
            if (has_run_files(files))
                monitor->set_run_place(index, RunPlace{files, {}, {}});
            else if (ended && on_agent)
                keep_run_files(id);
        }
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
    }
    connect(monitor, &RunMonitor::drill_down_requested, this,
            [this](std::int64_t run, const DrillFilter& filter) { drill_down(run, filter); });
    connect(monitor, &RunMonitor::tag_metrics_requested, this,
            [this](std::int64_t run) { show_tag_metrics(run); });
    monitor->redraw_now();
    add_tab(monitor, names.join(QStringLiteral(" vs ")));
    return monitor;
}

void MainWindow::export_run_onnx_asking(std::int64_t run_id) {
    if (!project_) return;
    QString name;
    try {
        name = qs(store::get_run(*project_, run_id).setup.name);
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
        return;
    }
    const QString file = QFileDialog::getSaveFileName(
        this, tr("Export ONNX"), name + QStringLiteral(".onnx"), tr("ONNX model (*.onnx)"));
    if (!file.isEmpty()) export_run_onnx(run_id, file);
}

void MainWindow::export_run_onnx(std::int64_t run_id, const QString& file) {
    if (!project_) return;
    const auto folder = store::run_files_folder(*project_, run_id);
    keep_run_files(run_id, [this, run_id, folder, file] {
        // The run's size; re-scored on the run's dataset, so a bad export is said at once.
        QStringList args;
        try {
            const store::RunInfo run = store::get_run(*project_, run_id);
            const auto weights = best_run_weights(folder);
            if (weights.empty()) throw InputError("run", "it has no weights");
            args << QStringLiteral("export") << QStringLiteral("detect")
                 << QStringLiteral("model=") + from_path(weights) << QStringLiteral("format=onnx")
                 << QStringLiteral("out=") + file << run_size_args(run);
            if (run.setup.dataset_id)
                args << QStringLiteral("data=") +
                            from_path(store::snapshot_dataset(*project_, *run.setup.dataset_id));
        } catch (const std::exception& e) {
            log(QString(log_level_name(LogLevel::Error)),
                tr("ONNX export: %1").arg(QString::fromUtf8(e.what())));
            return;
        }
        log(QString(log_level_name(LogLevel::Info)),
            tr("ONNX export: writing %1 and re-scoring it…").arg(file));
        run_command_line(args, tr("ONNX export"), [this, file](bool ok, const QString& output) {
            log(QString(log_level_name(ok ? LogLevel::Info : LogLevel::Error)),
                ok ? tr("ONNX export: %1").arg(output)
                   : tr("ONNX export of %1 failed: %2").arg(file, output.right(1500)));
        });
    });
}

void MainWindow::run_command_line(const QStringList& args, const QString& what,
                                  std::function<void(bool, const QString&)> done) {
    start_command_line(args, [this, what, done](int code, const QString& output) {
        if (code == kCommandDidNotStart) {
            log(QString(log_level_name(LogLevel::Error)),
                tr("%1 needs the crucible command line next to the studio: %2").arg(what, output));
            return;
        }
        done(code == 0, output);
    });
}

void MainWindow::start_command_line(const QStringList& args,
                                    std::function<void(int, const QString&)> done) {
    auto* process = new QProcess(this);
    process->setProcessChannelMode(QProcess::MergedChannels);
    connect(process, &QProcess::finished, this,
            [process, done](int code, QProcess::ExitStatus status) {
                process->deleteLater();
                done(status == QProcess::NormalExit ? code : kCommandCrashed,
                     QString::fromUtf8(process->readAll()).trimmed());
            });
    connect(process, &QProcess::errorOccurred, this, [process, done](QProcess::ProcessError e) {
        if (e != QProcess::FailedToStart) return;
        process->deleteLater();
        done(kCommandDidNotStart, process->errorString());
    });
    process->start(command_line(), args);
}

std::filesystem::path MainWindow::best_run_weights(const std::filesystem::path& folder) {
    std::filesystem::path weights;
    for (const auto& w : run_weight_files(folder))
        if (w.filename() == "best.safetensors" || weights.empty()) weights = w;
    return weights;
}

QStringList MainWindow::run_size_args(const store::RunInfo& run) {
    if (const auto it = run.setup.options.find("imgsz");
        it != run.setup.options.end() && it->is_number_integer())
        return {QStringLiteral("imgsz=%1").arg(it->get<long long>())};
    return {};
}

QString MainWindow::command_line() const {
    return command_line_.isEmpty()
               ? find_beside_studio(QStringLiteral("crucible"), QStringLiteral("cli"))
               : command_line_;
}

void MainWindow::drill_down(std::int64_t run_id, const DrillFilter& filter) {
    with_per_image_report(
        run_id, [this, run_id, filter](const std::filesystem::path&, data::PerImageReport report) {
            show_drill_down(run_id, std::move(report), filter);
        });
}

void MainWindow::show_tag_metrics(std::int64_t run_id) {
    with_per_image_report(
        run_id, [this, run_id](const std::filesystem::path& file, data::PerImageReport report) {
            show_tag_metrics(run_id, file, std::move(report));
        });
}

// The report as read from `file`; none (logged) when it cannot be read.
static std::optional<data::PerImageReport> read_per_image_report(
    const std::filesystem::path& file, const std::function<void(const QString&)>& fail) {
    try {
        return data::parse_per_image_report(read_json_file(file), path_to_utf8(file));
    } catch (const std::exception& e) {
        fail(QString::fromUtf8(e.what()));
        return std::nullopt;
    }
}

void MainWindow::with_per_image_report(std::int64_t run_id, PerImageReportUser then) {
    if (!project_ || run_id < 0) return;
    const auto folder = store::run_files_folder(*project_, run_id);
    const auto report = folder / "per_image.json";
    std::error_code ec;
    if (std::filesystem::exists(report, ec)) {
        // Read once and handed over; unreadable or older, it is scored again below.
        auto read = read_per_image_report(report, [](const QString&) {});
        if (read && read->version == data::kPerImageReportVersion) {
            then(report, std::move(*read));
            return;
        }
        log(QString(log_level_name(LogLevel::Info)),
            tr("drill-down: the run's image report is of an older kind; scoring it again"));
        std::filesystem::remove(report, ec);
    }
    // The first drill-down of a run scores its best weights on its dataset's validation images
    // once, through the command line next to the studio (`crucible val ... per_image=`).
    keep_run_files(run_id, [this, run_id, folder, report, then = std::move(then)] {
        QStringList args;
        try {
            const store::RunInfo run = store::get_run(*project_, run_id);
            const auto weights = best_run_weights(folder);
            if (weights.empty() || !run.setup.dataset_id)
                throw InputError("run", "it has no weights or no dataset of this project");
            args << QStringLiteral("val") << QStringLiteral("detect")
                 << QStringLiteral("model=") + from_path(weights)
                 << QStringLiteral("data=") +
                        from_path(store::snapshot_dataset(*project_, *run.setup.dataset_id))
                 << QStringLiteral("per_image=") + from_path(report) << run_size_args(run);
        } catch (const std::exception& e) {
            log(QString(log_level_name(LogLevel::Error)),
                tr("drill-down: %1").arg(QString::fromUtf8(e.what())));
            return;
        }
        log(QString(log_level_name(LogLevel::Info)),
            tr("drill-down: scoring the run's validation images once…"));
        run_command_line(
            args, tr("drill-down"), [this, report, then](bool ok, const QString& output) {
                std::error_code missing;
                if (!ok || !std::filesystem::exists(report, missing)) {
                    log(QString(log_level_name(LogLevel::Error)),
                        tr("drill-down: scoring the images failed: %1").arg(output.right(1500)));
                    return;
                }
                auto read = read_per_image_report(report, [this](const QString& why) {
                    log(QString(log_level_name(LogLevel::Error)), tr("drill-down: %1").arg(why));
                });
                if (read) then(report, std::move(*read));
            });
    });
}

DrillDownView* MainWindow::open_drill_down(std::int64_t run_id,
                                           const std::filesystem::path& report_file,
                                           const DrillFilter& filter) {
    auto report = read_per_image_report(report_file, [this](const QString& why) {
        log(QString(log_level_name(LogLevel::Error)), tr("drill-down: %1").arg(why));
    });
    return report ? show_drill_down(run_id, std::move(*report), filter) : nullptr;
}

DrillDownView* MainWindow::show_drill_down(std::int64_t run_id, data::PerImageReport report,
                                           const DrillFilter& filter) {
    if (!project_) return nullptr;
    std::optional<std::int64_t> dataset;
    QString run_name;
    try {
        const store::RunInfo run = store::get_run(*project_, run_id);
        dataset = run.setup.dataset_id;
        run_name = qs(run.setup.name);
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)),
            tr("drill-down: %1").arg(QString::fromUtf8(e.what())));
        return nullptr;
    }
    auto* view = new DrillDownView(std::move(report), filter, tabs_);
    connect(view, &DrillDownView::open_image, this,
            [this, dataset](const data::ImageOutcome& image, double conf) {
                if (dataset) open_image_with_predictions(*dataset, image, conf);
            });
    add_tab(view, tr("Images: %1").arg(run_name));
    return view;
}

TagMetricsView* MainWindow::show_tag_metrics(std::int64_t run_id,
                                             const std::filesystem::path& report_file,
                                             data::PerImageReport report) {
    if (!project_) return nullptr;
    QString run_name;
    try {
        run_name = qs(store::get_run(*project_, run_id).setup.name);
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)),
            tr("metrics by tag: %1").arg(QString::fromUtf8(e.what())));
        return nullptr;
    }
    auto* view = new TagMetricsView(std::move(report), tabs_);
    connect(view, &TagMetricsView::tag_activated, this,
            [this, run_id, report_file](const QString& key_value) {
                DrillFilter f;
                f.tag = key_value;
                open_drill_down(run_id, report_file, f);
            });
    add_tab(view, tr("By tag: %1").arg(run_name));
    return view;
}

AnnotationEditor* MainWindow::open_image_with_predictions(std::int64_t dataset_id,
                                                          const data::ImageOutcome& image,
                                                          double conf) {
    const auto content = dataset_content(dataset_id);
    // The report names the run's snapshot of the dataset: hard links of the same files where
    // the file system allows them, else copies of the same names.
    int index = -1, by_name = -1;
    for (std::size_t i = 0; i < content->images.size() && index < 0; ++i) {
        std::error_code ec;
        if (content->images[i].path == image.path ||
            std::filesystem::equivalent(content->images[i].path, image.path, ec))
            index = static_cast<int>(i);
        else if (content->images[i].path.filename() == image.path.filename())
            by_name = by_name == -1 ? static_cast<int>(i) : -2;  // -2: not one
    }
    if (index < 0 && by_name >= 0) index = by_name;
    if (index < 0) {
        log(QString(log_level_name(LogLevel::Warning)),
            tr("%1 is not in the run's dataset any more").arg(from_path(image.path)));
        return nullptr;
    }
    AnnotationEditor* editor = open_annotation(dataset_id, index);
    if (!editor) return nullptr;
    std::vector<Detection> predictions;
    for (const auto& p : image.predictions)
        predictions.push_back({p.box.cls, p.box.cx, p.box.cy, p.box.w, p.box.h, p.conf});
    editor->set_suggestion_threshold(conf);
    editor->set_suggestions(index, std::move(predictions));
    return editor;
}

std::optional<RunPlace> MainWindow::run_place(const store::RunInfo& run) const {
    if (run.setup.remote_job_id.empty()) return std::nullopt;
    RunPlace place;
    place.job = run.setup.remote_job_id;
    if (run.setup.server.empty()) {
        if (!local_agent_ || !local_agent_->ready()) return std::nullopt;
        place.endpoint = local_agent_->endpoint();
        return place;
    }
    const auto server = find_server(run.setup.server);
    if (!server) return std::nullopt;
    place.endpoint = endpoint_for(*server);
    return place;
}

void MainWindow::keep_run_files(std::int64_t run_id, std::function<void()> then) {
    if (!project_ || fetching_files_.count(run_id)) return;
    std::optional<RunPlace> place;
    std::filesystem::path folder;
    QString name;
    try {
        const store::RunInfo run = store::get_run(*project_, run_id);
        folder = store::run_files_folder(*project_, run_id);
        name = qs(run.setup.name);
        place = run_place(run);
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
        return;
    }
    if (has_run_files(folder)) {
        if (then) then();
        return;
    }
    if (!place) {
        log(QString(log_level_name(LogLevel::Warning)),
            tr("%1: its server is not reachable now; its files are fetched when it is").arg(name));
        return;
    }
    fetching_files_.insert(run_id);
    run_in_background<FetchedRunFiles>(
        this, [place = *place, folder] { return fetch_run_files(place, folder); },
        [this, run_id, name, folder, then = std::move(then)](FetchedRunFiles got, QString error) {
            fetching_files_.erase(run_id);
            if (!error.isEmpty()) got.failed.push_back(error.toStdString());
            if (!got.failed.empty()) {
                log(QString(log_level_name(LogLevel::Error)),
                    tr("%1: %2 file(s) not kept beside the project (tried 3 times): %3")
                        .arg(name)
                        .arg(got.failed.size())
                        .arg(qs(got.failed.front())));
                return;
            }
            log(QString(log_level_name(LogLevel::Info)),
                tr("%1: %2 file(s) kept in %3 (%4 MB fetched)")
                    .arg(name)
                    .arg(got.fetched + got.kept)
                    .arg(from_path(folder))
                    .arg(static_cast<double>(got.bytes) / 1e6, 0, 'f', 1));
            if (then) then();
        });
}

void MainWindow::predict_preview_asking(std::int64_t run_id) {
    if (!project_) return;
    QString start_in;
    try {
        const store::RunInfo run = store::get_run(*project_, run_id);
        if (run.setup.dataset_id)
            start_in = from_path(project_->resolve_stored_path(
                store::get_dataset(*project_, *run.setup.dataset_id).source));
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
        return;
    }
    const QStringList files =
        QFileDialog::getOpenFileNames(this, tr("Pictures to predict on"), start_in,
                                      tr("Images (*.jpg *.jpeg *.png *.bmp *.tif *.tiff *.webp)"));
    if (files.isEmpty()) return;
    std::vector<std::filesystem::path> images;
    for (const QString& f : files)
        images.push_back(to_path(f));
    const auto folder = store::run_files_folder(*project_, run_id);
    keep_run_files(run_id, [this, run_id, images, folder] {
        const auto weights = run_weight_files(folder);
        if (weights.empty()) {
            log(QString(log_level_name(LogLevel::Warning)), tr("this run has no weight files"));
            return;
        }
        open_predict_preview(run_id, images, weights.front());
    });
}

PredictPreview* MainWindow::open_predict_preview(std::int64_t run_id,
                                                 const std::vector<std::filesystem::path>& images,
                                                 const std::filesystem::path& weights,
                                                 const QString& program) {
    if (!project_) return nullptr;
    try {
        const store::RunInfo run = store::get_run(*project_, run_id);
        std::vector<std::string> names;
        if (run.setup.dataset_id)
            names = store::dataset_class_names(*project_, *run.setup.dataset_id);
        // Predicted at the size the run trained at, when it has one.
        const QStringList extra = run_size_args(run);
        auto* preview =
            new PredictPreview(program.isEmpty() ? command_line() : program, qs(run.setup.task),
                               weights, images, std::move(names), extra, tabs_);
        connect(preview, &PredictPreview::done, this, [this, preview](bool ok) {
            if (!ok) log(QString(log_level_name(LogLevel::Error)), preview->error());
        });
        add_tab(preview, tr("Preview: %1").arg(qs(run.setup.name)));
        preview->start();
        return preview;
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
        return nullptr;
    }
}

RunSetupView* MainWindow::clone_run(std::int64_t run_id) {
    if (!project_) return nullptr;
    try {
        const store::RunInfo run = store::get_run(*project_, run_id);
        RunSetupView* view = open_run_setup();
        view->load_setup(run.setup, tr("%1 (clone)").arg(qs(run.setup.name)));
        return view;
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
        return nullptr;
    }
}

void MainWindow::export_runs_csv_asking(const std::vector<std::int64_t>& run_ids) {
    if (!project_) return;
    const QString file = QFileDialog::getSaveFileName(
        this, tr("Export metrics as CSV"), QStringLiteral("metrics.csv"), tr("CSV (*.csv)"));
    if (!file.isEmpty()) export_runs_csv(run_ids, file);
}

bool MainWindow::export_runs_csv(const std::vector<std::int64_t>& run_ids, const QString& file) {
    if (!project_) return false;
    const auto metrics = to_path(file);
    auto per_class = metrics;
    per_class.replace_filename(path_to_utf8(metrics.stem()) + "_per_class.csv");
    try {
        write_file_atomically(metrics, store::tidy_metrics_csv(*project_, run_ids));
        write_file_atomically(per_class, store::tidy_per_class_csv(*project_, run_ids));
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)),
            tr("metrics not exported: %1").arg(QString::fromStdString(e.what())));
        return false;
    }
    log(QString(log_level_name(LogLevel::Info)),
        tr("exported the metrics of %1 to %2 and %3")
            .arg(run_ids.empty() ? tr("every run") : tr("%n run(s)", "", int(run_ids.size())), file,
                 from_path(per_class)));
    return true;
}

void MainWindow::save_run_weights_asking(std::int64_t run_id) {
    if (!project_) return;
    const auto folder = store::run_files_folder(*project_, run_id);
    keep_run_files(run_id, [this, folder] {
        const auto weights = run_weight_files(folder);
        if (weights.empty()) {
            log(QString(log_level_name(LogLevel::Warning)), tr("this run has no weight files"));
            return;
        }
        QStringList names;
        for (const auto& w : weights)
            names << from_path(w.lexically_relative(folder));
        QString chosen = names.front();
        if (names.size() > 1) {
            bool ok = false;
            chosen = QInputDialog::getItem(this, tr("Save weights"), tr("Weights:"), names, 0,
                                           false, &ok);
            if (!ok) return;
        }
        const auto source = weights[static_cast<std::size_t>(names.indexOf(chosen))];
        const QString target =
            QFileDialog::getSaveFileName(this, tr("Save weights as"), from_path(source.filename()));
        if (target.isEmpty()) return;
        std::error_code ec;
        std::filesystem::copy_file(source, to_path(target),
                                   std::filesystem::copy_options::overwrite_existing, ec);
        if (ec)
            log(QString(log_level_name(LogLevel::Error)),
                tr("weights not saved to %1: %2").arg(target, qs(ec.message())));
        else
            log(QString(log_level_name(LogLevel::Info)), tr("weights saved to %1").arg(target));
    });
}

RunMonitor* MainWindow::open_events_file(const QString& events_jsonl) {
    auto* monitor = new RunMonitor(tabs_);
    monitor->follow_file(to_path(events_jsonl), QFileInfo(events_jsonl).dir().dirName());
    add_tab(monitor, QFileInfo(events_jsonl).fileName());
    return monitor;
}

void MainWindow::compare_selected_runs() {
    std::vector<std::int64_t> ids;
    for (QTreeWidgetItem* item : tree_->selectedItems())
        if (item->data(0, kKindRole).toString() == QLatin1String("run"))
            ids.push_back(item->data(0, kIdRole).toLongLong());
    if (ids.empty()) {
        log(QString(log_level_name(LogLevel::Info)),
            tr("select runs in the project tree to compare them"));
        return;
    }
    open_runs(ids);
}

std::shared_ptr<DatasetContent> MainWindow::dataset_content(std::int64_t dataset_id) {
    if (auto it = contents_.find(dataset_id); it != contents_.end())
        if (auto existing = it->second.lock()) return existing;
    auto content = std::make_shared<DatasetContent>(load_dataset_content(*project_, dataset_id));
    contents_[dataset_id] = content;
    return content;
}

DatasetView* MainWindow::open_dataset(std::int64_t dataset_id) {
    if (!project_) return nullptr;
    try {
        const auto info = store::get_dataset(*project_, dataset_id);
        auto* view = new DatasetView(dataset_content(dataset_id), qs(info.name), tabs_);
        connect(view, &DatasetView::open_image, this,
                [this, dataset_id](int i) { open_annotation(dataset_id, i); });
        add_tab(view, qs(info.name));
        return view;
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
        return nullptr;
    }
}

void MainWindow::prelabel_asking(AnnotationEditor* editor, std::int64_t dataset_id,
                                 AnnotationEditor::PrelabelScope scope) {
    if (!project_) return;
    // The best weights of the runs that trained on this dataset (and kept their files here),
    // newest first, then any weights file.
    QStringList choices;
    std::vector<std::filesystem::path> weights;
    try {
        auto runs = store::list_runs(*project_);
        std::reverse(runs.begin(), runs.end());
        for (const auto& run : runs) {
            if (run.setup.dataset_id != dataset_id) continue;
            for (const auto& w : run_weight_files(store::run_files_folder(*project_, run.id)))
                if (w.filename() == "best.safetensors") {
                    choices << tr("%1 (run #%2, best weights)").arg(qs(run.setup.name)).arg(run.id);
                    weights.push_back(w);
                }
        }
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
        return;
    }
    const QString other = tr("Another model file (.pt, .safetensors or an .onnx export)…");
    choices << other;
    bool ok = false;
    const QString chosen =
        QInputDialog::getItem(this, tr("Pre-label with"), tr("Model:"), choices, 0, false, &ok);
    if (!ok) return;
    std::filesystem::path model;
    if (chosen == other) {
        const QString file =
            QFileDialog::getOpenFileName(this, tr("Model to pre-label with"), QString(),
                                         tr("Models (*.pt *.safetensors *.onnx)"));
        if (file.isEmpty()) return;
        model = to_path(file);
    } else {
        model = weights[static_cast<std::size_t>(choices.indexOf(chosen))];
    }
    // Where: next to the studio (the command line here) or on one of the user's servers, whose
    // GPU then predicts (the images and the model go up as a job's inputs).
    std::vector<net::RemoteEntry> servers;
    try {
        servers = list_servers();
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Warning)), QString::fromUtf8(e.what()));
    }
    QStringList places;
    const QString here = tr("This computer");
    if (!command_line().isEmpty()) places << here;
    for (const auto& s : servers)
        places << tr("%1 (the server's GPU)").arg(qs(s.name));
    if (places.isEmpty()) {
        editor->prelabel(command_line(), model, scope);  // says what is missing
        return;
    }
    QString place = places.front();
    if (places.size() > 1) {
        place =
            QInputDialog::getItem(this, tr("Pre-label on"), tr("Where:"), places, 0, false, &ok);
        if (!ok) return;
    }
    if (place == here) {
        editor->prelabel(command_line(), model, scope);
        return;
    }
    const auto& server =
        servers[static_cast<std::size_t>(places.indexOf(place) - (places.contains(here) ? 1 : 0))];
    const auto endpoint = endpoint_for(server);
    const QString name = qs(server.name);
    editor->prelabel_with(
        [endpoint, name, model](std::vector<std::filesystem::path> images,
                                QObject* parent) -> Predictor* {
            return new RemotePredict(endpoint, name, QStringLiteral("detect"), model,
                                     std::move(images), {}, parent);
        },
        scope);
}

AnnotationEditor* MainWindow::open_annotation(std::int64_t dataset_id, int image_index) {
    if (!project_) return nullptr;
    try {
        const auto info = store::get_dataset(*project_, dataset_id);
        auto* editor = new AnnotationEditor(*project_, dataset_content(dataset_id), tabs_);
        editor->open_image(image_index);
        connect(editor, &AnnotationEditor::failed, this,
                [this](const QString& m) { log(QString(log_level_name(LogLevel::Error)), m); });
        connect(editor, &AnnotationEditor::labels_written, this, [this, info](int files) {
            log(QString(log_level_name(LogLevel::Info)),
                tr("%1: labels written to the dataset's files (%2 changed)")
                    .arg(qs(info.name))
                    .arg(files));
        });
        connect(editor, &AnnotationEditor::edit_classes, this,
                [this, dataset_id] { edit_classes(dataset_id); });
        connect(editor, &AnnotationEditor::prelabel_requested, this,
                [this, editor, dataset_id](AnnotationEditor::PrelabelScope scope) {
                    prelabel_asking(editor, dataset_id, scope);
                });
        connect(editor, &AnnotationEditor::prelabel_finished, this,
                [this](bool ok, const QString& message) {
                    log(QString(log_level_name(ok ? LogLevel::Info : LogLevel::Error)),
                        tr("pre-labelling: %1").arg(message));
                });
        const QString title = tr("Annotate: %1").arg(qs(info.name));
        connect(editor, &AnnotationEditor::unwritten_changed, this,
                [this, editor, title](bool unwritten) {
                    // "*": the project has edits the label files do not (Ctrl+S writes them).
                    const int i = tabs_->indexOf(editor);
                    if (i >= 0)
                        tabs_->setTabText(i, unwritten ? title + QStringLiteral(" *") : title);
                });
        connect(editor, &AnnotationEditor::edited, this, [this, dataset_id] {
            // Grids of the same dataset show the new boxes.
            for (int i = 0; i < tabs_->count(); ++i)
                if (auto* v = qobject_cast<DatasetView*>(tabs_->widget(i)))
                    if (v->content()->dataset_id == dataset_id) v->content_changed();
        });
        add_tab(editor, title);
        editor->canvas()->setFocus();
        return editor;
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
        return nullptr;
    }
}

RunSetupView* MainWindow::open_run_setup() {
    auto* view = new RunSetupView(project_.get(), tasks_, tabs_);
    if (local_agent_ && local_agent_->ready()) view->set_local_endpoint(local_agent_->endpoint());
    // The memory check asks the task's own prediction through the command line (app/cli
    // `train ... dry_run=true`).
    view->set_dry_runner(
        [this](const QStringList& args, std::function<void(int, const QString&)> done) {
            start_command_line(args, std::move(done));
        });
    connect(view, &RunSetupView::run_created, this, [this](std::int64_t id) {
        log(QString(log_level_name(LogLevel::Info)), tr("run %1 created").arg(id));
        refresh_tree();
    });
    connect(view, &RunSetupView::run_submitted, this, [this](std::int64_t id, const QString& job) {
        log(QString(log_level_name(LogLevel::Info)),
            tr("run %1 submitted as job %2").arg(id).arg(job));
        refresh_tree();
        open_run(id);
    });
    connect(view, &RunSetupView::submit_failed, this,
            [this](const QString& m) { log(QString(log_level_name(LogLevel::Error)), m); });
    add_tab(view, tr("New run"));
    return view;
}

void MainWindow::import_dataset(const QString& source) {
    if (!project_) {
        log(QString(log_level_name(LogLevel::Error)),
            tr("open or create a project before importing a dataset"));
        return;
    }
    if (busy_) {
        log(QString(log_level_name(LogLevel::Warning)), tr("an import is already running"));
        return;
    }
    std::string name = QFileInfo(source).fileName().toStdString();
    try {
        if (store::find_dataset(*project_, name)) {  // taken: offer a free name to edit
            bool ok = false;
            const QString chosen = QInputDialog::getText(
                this, tr("Dataset name taken"),
                tr("The project has a dataset named %1 already. Import this one as:").arg(qs(name)),
                QLineEdit::Normal, qs(store::free_dataset_name(*project_, name)), &ok);
            if (!ok || chosen.trimmed().isEmpty()) {
                log(QString(log_level_name(LogLevel::Info)), tr("import canceled"));
                return;
            }
            name = chosen.trimmed().toStdString();
        }
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
        return;
    }
    busy_ = true;
    // The project is used by the import thread only until it reports back; the tree and tabs
    // are disabled meanwhile so the GUI does not touch it.
    tree_->setEnabled(false);
    tabs_->setEnabled(false);
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    auto done_count = std::make_shared<std::atomic<int>>(0);
    auto total = std::make_shared<std::atomic<int>>(0);
    auto* dialog = new QProgressDialog(tr("Importing %1").arg(source), tr("Cancel"), 0, 0, this);
    dialog->setMinimumDuration(300);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QProgressDialog::canceled, this, [cancel] { *cancel = true; });
    auto* timer = new QTimer(dialog);
    connect(timer, &QTimer::timeout, dialog, [dialog, done_count, total] {
        dialog->setMaximum(total->load());
        dialog->setValue(done_count->load());
    });
    timer->start(100);
    store::Project* project = project_.get();
    struct Outcome {
        store::ImportResult result;
        std::vector<std::string> problems;
    };
    run_in_background<Outcome>(
        this,
        [project, source, name, cancel, done_count, total] {
            Outcome out;
            store::ImportOptions options;
            options.name = name;
            options.cancel = cancel.get();
            options.progress = [done_count, total](const store::ImportProgress& p) {
                *done_count = static_cast<int>(p.done);
                *total = static_cast<int>(p.total);
            };
            out.result = store::import_dataset_from(*project, to_path(source), "auto", options,
                                                    &out.problems);
            return out;
        },
        [this, dialog, source](Outcome out, QString error) {
            busy_ = false;
            tree_->setEnabled(true);
            tabs_->setEnabled(true);
            dialog->close();
            if (!error.isEmpty()) {
                log(QString(log_level_name(LogLevel::Error)),
                    tr("import of %1 failed: %2").arg(source, error));
                return;
            }
            for (const auto& p : out.problems)
                log(QString(log_level_name(LogLevel::Warning)), qs(p));
            log(QString(log_level_name(LogLevel::Info)), tr("imported %1: %2 images, %3 boxes")
                                                             .arg(source)
                                                             .arg(out.result.images)
                                                             .arg(out.result.boxes));
            refresh_tree();
        });
}

void MainWindow::change_server_token(const QString& name) {
    bool ok = false;
    const QString token =
        QInputDialog::getText(this, tr("Change token"), tr("New token for %1:").arg(name),
                              QLineEdit::Password, QString(), &ok);
    if (!ok || token.isEmpty()) return;
    try {
        set_server_token(name.toStdString(), token.toStdString());
        log(QString(log_level_name(LogLevel::Info)), tr("server %1: token changed").arg(name));
        check_server(name);
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
    }
}

void MainWindow::delete_run_asking(std::int64_t run_id) {
    if (!project_) return;
    try {
        const store::RunInfo run = store::get_run(*project_, run_id);
        const auto answer = QMessageBox::question(
            this, tr("Delete run"),
            tr("Delete the run %1 and its %2 stored events from this project? A job on a server "
               "is not touched.")
                .arg(qs(run.setup.name))
                .arg(run.events));
        if (answer != QMessageBox::Yes) return;
        for (int i = tabs_->count() - 1; i >= 0; --i)
            if (auto* monitor = qobject_cast<RunMonitor*>(tabs_->widget(i));
                monitor && monitor->shows_store_run(run_id))
                emit tabs_->tabCloseRequested(i);
        // Marked first: a studio closed before the history is gone finishes on the next open.
        store::update_run_state(*project_, run_id, store::kDeletingState);
        deleting_runs_.push_back(run_id);
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
    }
    refresh_tree();
    delete_runs_in_slices();
}

void MainWindow::delete_runs_in_slices() {
    if (!project_ || deleting_runs_.empty() || deletion_scheduled_) return;
    deletion_scheduled_ = true;
    // A slice of a few tens of milliseconds per turn of the event loop, so a run of a million
    // events goes without freezing the window.
    QTimer::singleShot(0, this, [this] {
        deletion_scheduled_ = false;
        if (!project_ || deleting_runs_.empty()) return;
        const std::int64_t run_id = deleting_runs_.front();
        try {
            if (store::delete_run_history_slice(*project_, run_id, kDeleteSlice) == 0) {
                const std::string name = store::get_run(*project_, run_id).setup.name;
                store::delete_run(*project_, run_id);
                deleting_runs_.erase(deleting_runs_.begin());
                log(QString(log_level_name(LogLevel::Info)), tr("run %1 deleted").arg(qs(name)));
                refresh_tree();
            }
        } catch (const std::exception& e) {
            deleting_runs_.erase(deleting_runs_.begin());
            log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
        }
        delete_runs_in_slices();
    });
}

void MainWindow::close_dataset_tabs(std::int64_t dataset_id) {
    for (int i = tabs_->count() - 1; i >= 0; --i) {
        QWidget* w = tabs_->widget(i);
        const auto* view = qobject_cast<DatasetView*>(w);
        const auto* editor = qobject_cast<AnnotationEditor*>(w);
        if ((view && view->content()->dataset_id == dataset_id) ||
            (editor && editor->content()->dataset_id == dataset_id))
            emit tabs_->tabCloseRequested(i);
    }
}

void MainWindow::delete_dataset_asking(std::int64_t dataset_id) {
    if (!project_) return;
    try {
        const store::DatasetInfo info = store::get_dataset(*project_, dataset_id);
        const auto answer = QMessageBox::question(
            this, tr("Delete dataset"),
            tr("Remove the dataset %1 (%2 images, %3 boxes) from this project? Its image and "
               "label files stay where they are; its snapshots beside the project go, but for "
               "the ones runs trained on.")
                .arg(qs(info.name))
                .arg(info.images)
                .arg(info.boxes));
        if (answer != QMessageBox::Yes) return;
        close_dataset_tabs(dataset_id);
        store::delete_dataset(*project_, dataset_id);
        log(QString(log_level_name(LogLevel::Info)), tr("dataset %1 removed").arg(qs(info.name)));
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
    }
    refresh_tree();
}

void MainWindow::remove_server_asking(const QString& name) {
    const auto answer = QMessageBox::question(
        this, tr("Remove server"),
        tr("Forget the server %1 and its token? Runs on it keep their records; jobs on the "
           "server are not touched.")
            .arg(name));
    if (answer != QMessageBox::Yes) return;
    try {
        remove_server(name.toStdString());
        log(QString(log_level_name(LogLevel::Info)), tr("server %1 removed").arg(name));
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
    }
    refresh_tree();
}

void MainWindow::set_server_state(const QString& name, const QString& state) {
    if (state.isEmpty())
        server_states_.erase(name);
    else
        server_states_[name] = state;
    QStringList parts;
    for (const auto& [server, text] : server_states_)
        parts << QStringLiteral("%1: %2").arg(server, text);
    connection_label_->setText(parts.isEmpty() ? tr("no server")
                                               : parts.join(QStringLiteral(" · ")));
}

void MainWindow::check_server(const QString& name) {
    std::optional<net::RemoteEntry> server;
    try {
        server = find_server(name.toStdString());
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
        return;
    }
    if (!server) return;
    const auto ep = endpoint_for(*server);
    set_server_state(name, tr("connecting…"));
    struct Answer {
        net::AgentInfo info;
        QString problem;  // "invalid token", "locked out", ... (empty: it answered)
    };
    run_in_background<Answer>(
        this,
        [ep] {
            Answer answer;
            try {
                answer.info = net::ApiClient(ep).info();
            } catch (const net::ApiError& e) {
                answer.problem = server_problem(e);
                if (answer.problem.isEmpty()) throw;
            }
            return answer;
        },
        [this, name](Answer answer, QString error) {
            if (!answer.problem.isEmpty() || !error.isEmpty()) {
                set_server_state(name, answer.problem.isEmpty() ? tr("offline") : answer.problem);
                log(QString(log_level_name(LogLevel::Error)),
                    tr("%1: %2").arg(name, error.isEmpty() ? answer.problem : error));
                return;
            }
            const net::AgentInfo& info = answer.info;
            try {
                set_server_state(name, tr("connected (agent %1)").arg(qs(info.version)));
                QStringList gpus;
                for (const auto& gpu : info.gpus.gpus) {
                    constexpr double kGiB = 1 << 30;
                    gpus << tr("%1 %2/%3 GiB free")
                                .arg(gpu.name.empty() ? QStringLiteral("GPU") : qs(gpu.name))
                                .arg(static_cast<double>(gpu.memory_free()) / kGiB, 0, 'f', 1)
                                .arg(static_cast<double>(gpu.memory_total) / kGiB, 0, 'f', 1);
                }
                gpu_label_->setText(gpus.isEmpty() ? tr("GPU: none (CPU)")
                                                   : tr("GPU: ") + gpus.join(QStringLiteral("; ")));
                if (tasks_.empty()) set_task_schemas(info.tasks);
            } catch (const std::exception& e) {
                log(QString(log_level_name(LogLevel::Error)),
                    tr("%1: unexpected answer: %2").arg(name, QString::fromUtf8(e.what())));
            }
        });
}

void MainWindow::edit_classes(std::int64_t dataset_id) {
    if (!project_) return;
    try {
        ClassEditor editor(*project_, dataset_id, this);
        connect(&editor, &ClassEditor::changed, this,
                [this, dataset_id] { reload_dataset(dataset_id); });
        connect(&editor, &ClassEditor::failed, this,
                [this](const QString& m) { log(QString(log_level_name(LogLevel::Error)), m); });
        editor.exec();
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
    }
}

void MainWindow::reload_dataset(std::int64_t dataset_id) {
    if (!project_) return;
    auto it = contents_.find(dataset_id);
    if (auto content = it != contents_.end() ? it->second.lock() : nullptr) {
        try {
            *content = load_dataset_content(*project_, dataset_id);
        } catch (const std::exception& e) {
            log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
            return;
        }
        for (int i = 0; i < tabs_->count(); ++i) {
            if (auto* v = qobject_cast<DatasetView*>(tabs_->widget(i));
                v && v->content() == content)
                v->content_changed();
            if (auto* e = qobject_cast<AnnotationEditor*>(tabs_->widget(i));
                e && e->content() == content)
                e->classes_changed();
        }
    }
    refresh_tree();
}

bool MainWindow::settle_unwritten_labels(const std::vector<AnnotationEditor*>& editors) {
    std::vector<std::int64_t> datasets;
    for (auto* e : editors)
        if (e->has_unwritten_edits() &&
            std::find(datasets.begin(), datasets.end(), e->content()->dataset_id) == datasets.end())
            datasets.push_back(e->content()->dataset_id);
    if (datasets.empty() || !project_) return true;
    const auto answer = QMessageBox::question(
        this, tr("Labels not written"),
        tr("%n dataset(s) have edits that their label files do not have yet (they are kept in "
           "the project either way). Write the label files now?",
           nullptr, static_cast<int>(datasets.size())),
        QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    if (answer == QMessageBox::Cancel) return false;
    if (answer != QMessageBox::Save) return true;
    for (auto id : datasets) {
        try {
            const auto written = store::write_labels_to_files(*project_, id);
            log(QString(log_level_name(LogLevel::Info)),
                tr("labels written to the dataset's files (%1 changed)").arg(written));
        } catch (const std::exception& e) {
            log(QString(log_level_name(LogLevel::Error)),
                tr("labels not written: %1").arg(QString::fromUtf8(e.what())));
            return false;
        }
    }
    for (auto* e : editors)
        e->mark_written();
    return true;
}

bool MainWindow::settle_local_runs() {
    if (!local_agent_ || !local_agent_->ready()) return true;
    std::vector<net::JobInfo> active;
    try {
        for (auto& job : net::ApiClient(local_agent_->endpoint()).jobs())
            if (job.state == JobState::Queued || job.state == JobState::Running)
                active.push_back(std::move(job));
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Warning)),
            tr("this computer's agent did not list its runs: %1").arg(QString::fromUtf8(e.what())));
        return true;
    }
    if (active.empty()) return true;
    QMessageBox box(QMessageBox::Question, tr("Runs are training"),
                    tr("%n run(s) are training on this computer. Keep them training after Crucible "
                       "Studio closes? Their curves continue when you open the project again.",
                       nullptr, static_cast<int>(active.size())),
                    QMessageBox::Yes | QMessageBox::No | QMessageBox::Cancel, this);
    box.button(QMessageBox::Yes)->setText(tr("Keep training"));
    box.button(QMessageBox::No)->setText(tr("Pause them"));
    box.setDefaultButton(QMessageBox::Yes);
    const int answer = box.exec();
    if (answer == QMessageBox::Cancel) return false;
    if (answer == QMessageBox::No) {
        net::ApiClient client(local_agent_->endpoint());
        for (const auto& job : active) {
            try {
                client.control(job.id, net::JobAction::Pause);  // it checkpoints, then stops
            } catch (const std::exception& e) {
                log(QString(log_level_name(LogLevel::Error)),
                    tr("job %1 not paused: %2").arg(qs(job.id), QString::fromUtf8(e.what())));
            }
        }
    }
    return true;
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (busy_) {
        log(QString(log_level_name(LogLevel::Warning)),
            tr("wait for the import to finish or cancel it"));
        event->ignore();
        return;
    }
    if (!settle_unwritten_labels(annotation_editors()) || !settle_local_runs()) {
        event->ignore();
        return;
    }
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    QMainWindow::closeEvent(event);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    for (const QUrl& url : event->mimeData()->urls()) {
        if (!url.isLocalFile()) continue;
        const QString f = url.toLocalFile();
        if (f.endsWith(QStringLiteral(".crucible")))
            open_project(f);
        else if (f.endsWith(QStringLiteral(".jsonl")))
            open_events_file(f);
        else
            import_dataset(f);
    }
    event->acceptProposedAction();
}

}  // namespace crucible::ui

namespace crucible::ui {

bool MainWindow::with_trusted_fingerprint(const QString& url,
                                          std::function<void(const std::string&)> trusted) {
    net::ParsedUrl parsed;
    try {
        parsed = net::parse_url(url.toStdString());
    } catch (const std::exception& e) {
        log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
        return false;
    }
    if (!parsed.https) {
        if (!net::is_loopback_host(parsed.host) &&
            QMessageBox::warning(
                this, tr("Plain HTTP"),
                tr("%1 is plain HTTP to another machine: the token and every dataset and weight "
                   "file travel unencrypted, readable by anyone on the network.\n\nUse "
                   "https:// instead (the agent serves TLS off loopback unless it was started "
                   "with --insecure). Use plain HTTP anyway?")
                    .arg(url),
                QMessageBox::Yes | QMessageBox::No, QMessageBox::No) != QMessageBox::Yes)
            return false;
        trusted("");
        return true;
    }
    // First contact: show the certificate's fingerprint and pin it only when the user agrees.
    const std::string u = url.toStdString();
    run_in_background<std::string>(
        this, [u] { return net::ApiClient::probe_fingerprint(u); },
        [this, url, trusted = std::move(trusted)](std::string fingerprint, QString error) {
            if (!error.isEmpty()) {
                log(QString(log_level_name(LogLevel::Error)),
                    tr("cannot reach %1: %2").arg(url, error));
                return;
            }
            const auto answer = QMessageBox::question(
                this, tr("Trust this server?"),
                tr("%1 presents a certificate with the SHA-256 fingerprint\n\n%2\n\nCompare it "
                   "with the one `crucible agent doctor` prints on the server. Trust it?")
                    .arg(url, qs(fingerprint)));
            if (answer == QMessageBox::Yes) trusted(fingerprint);
        });
    return true;
}

bool MainWindow::add_server(const QString& name, const QString& url, const QString& token) {
    // Set when the server is stored now (plain HTTP); an https one is stored later, after its
    // certificate is confirmed, when this call has returned.
    auto added = std::make_shared<bool>(false);
    with_trusted_fingerprint(url, [this, name, url, token, added](const std::string& fingerprint) {
        try {
            ui::add_server(name.toStdString(), url.toStdString(), token.toStdString(), fingerprint);
            log(QString(log_level_name(LogLevel::Info)), tr("server %1 added").arg(name));
            refresh_tree();
            check_server(name);
            *added = true;
        } catch (const std::exception& e) {
            log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
        }
    });
    return *added;
}

void MainWindow::change_server_url_asking(const QString& name) {
    const auto server = find_server(name.toStdString());
    if (!server) return;
    bool ok = false;
    const QString url =
        QInputDialog::getText(this, tr("Server address"), tr("New URL of %1:").arg(name),
                              QLineEdit::Normal, qs(server->url), &ok)
            .trimmed();
    if (!ok || url.isEmpty() || url == qs(server->url)) return;
    with_trusted_fingerprint(url, [this, name, url](const std::string& fingerprint) {
        try {
            change_server_url(name.toStdString(), url.toStdString(), fingerprint);
            log(QString(log_level_name(LogLevel::Info)),
                tr("server %1 is now at %2").arg(name, url));
            refresh_tree();
            check_server(name);
        } catch (const std::exception& e) {
            log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
        }
    });
}

}  // namespace crucible::ui

namespace crucible::ui {

void MainWindow::follow_local_runs() {
    if (!project_ || !local_agent_ || !local_agent_->ready()) return;
    const net::RemoteEndpoint endpoint = local_agent_->endpoint();
    std::erase_if(local_follows_, [](const LocalFollow& f) { return f.monitor.isNull(); });
    for (auto& f : local_follows_) {
        if (f.url == endpoint.url) continue;  // followed through this agent already
        try {
            const store::RunInfo info = store::get_run(*project_, f.run_id);
            const std::int64_t id = f.run_id;
            f.monitor->follow_remote(
                f.index, endpoint, qs(info.setup.remote_job_id), info.last_seq,
                [this, id](const std::vector<Event>& events) { keep_events(id, events); });
            f.url = endpoint.url;
        } catch (const std::exception& e) {
            log(QString(log_level_name(LogLevel::Error)), QString::fromUtf8(e.what()));
        }
    }
}

void MainWindow::start_local_agent(const QString& program) {
    if (local_agent_ && local_agent_->running()) return;
    if (!local_agent_) {
        const QString agent =
            program.isEmpty()
                ? find_beside_studio(QStringLiteral("crucible-agent"), QStringLiteral("agent"))
                : program;
        if (agent.isEmpty()) {
            log(QString(log_level_name(LogLevel::Error)),
                tr("crucible-agent is not installed next to the studio"));
            return;
        }
        const QString agent_data =
            QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) +
            QStringLiteral("/local-agent");
        set_local_agent(new LocalAgent(agent, agent_data, {}, this));
    }
    set_server_state(tr("This computer"), tr("starting…"));
    local_agent_->start();
}

void MainWindow::set_local_agent(LocalAgent* agent) {
    if (local_agent_) return;
    local_agent_ = agent;
    local_agent_->setParent(this);
    connect(local_agent_, &LocalAgent::failed, this, [this](const QString& m) {
        set_server_state(tr("This computer"), tr("offline"));
        log(QString(log_level_name(LogLevel::Error)), m);
    });
    connect(local_agent_, &LocalAgent::started_ok, this, [this] {
        set_server_state(tr("This computer"), tr("connected"));
        log(QString(log_level_name(LogLevel::Info)),
            local_agent_->adopted()
                ? tr("local agent on %1 (still running from before)")
                      .arg(qs(local_agent_->endpoint().url))
                : tr("local agent on %1").arg(qs(local_agent_->endpoint().url)));
        follow_local_runs();
        for (int i = 0; i < tabs_->count(); ++i)
            if (auto* setup = qobject_cast<RunSetupView*>(tabs_->widget(i)))
                setup->set_local_endpoint(local_agent_->endpoint());
        const auto ep = local_agent_->endpoint();
        run_in_background<net::AgentInfo>(
            this, [ep] { return net::ApiClient(ep).info(); },
            [this](net::AgentInfo info, QString error) {
                if (error.isEmpty() && tasks_.empty()) set_task_schemas(info.tasks);
            });
    });
}

}  // namespace crucible::ui
