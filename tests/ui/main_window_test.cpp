// The main window opens a project and lists its datasets, runs and servers; opens a run in a
// monitor with its stored curves; keeps recent projects; the demo project has something to show.
#include <gtest/gtest.h>

#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QTabWidget>
#include <QTest>
#include <QTreeWidget>
#include <fstream>

#include "core/base/file_io.h"
#include "core/store/dataset_store.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "tests/ui/qt_test_env.h"
#include "ui/dataset_view.h"
#include "ui/demo_project.h"
#include "ui/log_console.h"
#include "ui/main_window.h"
#include "ui/run_monitor.h"
#include "ui/run_table.h"
#include "ui/server_access.h"
#include "ui/welcome_page.h"

using namespace crucible;
using namespace crucible::ui;

namespace {

QTreeWidgetItem* top(QTreeWidget* tree, const QString& name) {
    for (int i = 0; i < tree->topLevelItemCount(); ++i)
        if (tree->topLevelItem(i)->text(0) == name) return tree->topLevelItem(i);
    return nullptr;
}

QString qpath(const std::filesystem::path& p) {
    return QString::fromStdString(path_to_utf8(p));
}

}  // namespace

TEST(MainWindow, OpensAProjectAndListsItsRuns) {
    const auto dir = uitest::temp_dir();
    const auto file = dir / "项目 runs.crucible";  // non-ASCII name on purpose
    std::vector<std::int64_t> ids;
    {
        auto project = store::Project::create(file);
        for (const char* name : {"baseline", "bigger batch"}) {
            store::RunSetup setup;
            setup.name = name;
            setup.task = "toy";
            ids.push_back(store::create_run(*project, setup));
        }
        std::vector<Event> events;
        for (int i = 0; i < 30; ++i) {
            Event e = make_metric(0, i + 1, {{"train/loss", 1.0 / (i + 1)}});
            e.seq = i;
            e.t = 100.0 + i;
            events.push_back(e);
        }
        store::append_events(*project, ids[0], events);
        // A server the project kept itself (schema version 3): opening moves it to the
        // user's registry, where the studio lists it.
        project->db().exec(
            "INSERT INTO servers(name, url, tls_fingerprint) VALUES('gpu1', 'http://gpu1:7443', "
            "'')");
    }
    uitest::clear_server_registry();
    MainWindow window;
    window.show();
    ASSERT_TRUE(window.open_project(qpath(file)));
    QTreeWidget* tree = window.project_tree();
    QTreeWidgetItem* runs = top(tree, "Runs");
    ASSERT_NE(runs, nullptr);
    ASSERT_EQ(runs->childCount(), 2);
    EXPECT_TRUE(runs->child(0)->text(0).startsWith("baseline"));
    EXPECT_TRUE(runs->child(1)->text(0).startsWith("bigger batch"));
    EXPECT_EQ(runs->child(0)->data(0, MainWindow::kIdRole).toLongLong(), ids[0]);
    ASSERT_NE(top(tree, "Servers"), nullptr);
    EXPECT_EQ(top(tree, "Servers")->childCount(), 1);
    ASSERT_EQ(list_servers().size(), 1u);
    EXPECT_EQ(list_servers()[0].url, "http://gpu1:7443");
    EXPECT_TRUE(store::legacy_servers(*window.project()).empty());
    EXPECT_EQ(top(tree, "Datasets")->childCount(), 0);
    EXPECT_TRUE(window.windowTitle().contains(QString::fromUtf8("项目 runs.crucible")));
    EXPECT_EQ(window.recent_projects().value(0), qpath(file));

    // Activating a run opens its monitor with the stored curve.
    emit tree->itemActivated(runs->child(0), 0);
    ASSERT_EQ(window.tabs()->count(), 1);
    auto* monitor = qobject_cast<RunMonitor*>(window.tabs()->widget(0));
    ASSERT_NE(monitor, nullptr);
    ASSERT_TRUE(uitest::wait_for([&] { return !monitor->loading(); }));  // read in the background
    ASSERT_NE(monitor->series(0).find("train/loss"), nullptr);
    EXPECT_EQ(monitor->series(0).find("train/loss")->size(), 30u);
    EXPECT_TRUE(monitor->shows_store_run(ids[0]));  // what deleting the run closes first
    EXPECT_FALSE(monitor->shows_store_run(ids[1]));

    // A followed run's events are kept, and its state in the tree follows their status.
    EXPECT_EQ(runs->child(1)->text(0), "bigger batch [draft]");
    Event running = make_status("running");
    running.seq = 0;
    window.keep_events(ids[1], {running});
    EXPECT_EQ(runs->child(1)->text(0), "bigger batch [running]");
    EXPECT_EQ(store::get_run(*window.project(), ids[1]).events, 1);

    // Two selected runs open together in one monitor.
    runs->child(0)->setSelected(true);
    runs->child(1)->setSelected(true);
    RunMonitor* both = window.open_runs(ids);
    ASSERT_NE(both, nullptr);
    EXPECT_EQ(both->run_count(), 2);

    // Help ▸ About names the versions: Crucible, Qt, and the worker's LibTorch and CUDA runtime.
    EXPECT_TRUE(window.about_text().contains("No crucible-worker"))
        << window.about_text().toStdString();
    window.set_worker_description({{"version", "0.1.0"},
                                   {"libtorch", "2.11.0"},
                                   {"cuda_runtime", "13.0"},
                                   {"tasks", Json::array()}});
    const QString about = window.about_text();
    EXPECT_TRUE(about.contains(QStringLiteral("Crucible Studio " CRUCIBLE_VERSION)));
    EXPECT_TRUE(about.contains(QStringLiteral("Qt ") + qVersion()));
    EXPECT_TRUE(about.contains("LibTorch 2.11.0, CUDA runtime 13.0")) << about.toStdString();
    EXPECT_TRUE(about.contains("agent: not started"));

    // A file that is not a project is refused with a message, and the open project stays.
    const auto bogus = dir / "bogus.crucible";
    { std::ofstream(bogus) << "not sqlite"; }
    EXPECT_FALSE(window.open_project(qpath(bogus)));
    EXPECT_NE(window.project(), nullptr);
    EXPECT_TRUE(window.log_console()->toPlainText().contains("bogus.crucible"));
}

TEST(MainWindow, DemoProjectShowsADatasetAndARun) {
    const auto dir = uitest::temp_dir();
    DemoOptions options;
    options.train_images = 6;
    options.val_images = 2;
    options.imgsz = 96;
    options.epochs = 5;
    const auto file = ensure_demo_project(dir / "demo", options);
    EXPECT_EQ(ensure_demo_project(dir / "demo", options), file);  // second call reuses it
    MainWindow window;
    window.show();
    ASSERT_TRUE(window.open_project(qpath(file)));
    auto datasets = store::list_datasets(*window.project());
    ASSERT_EQ(datasets.size(), 1u);
    EXPECT_EQ(datasets[0].images, 8);
    DatasetView* view = window.open_dataset(datasets[0].id);
    ASSERT_NE(view, nullptr);
    EXPECT_EQ(view->model()->rowCount(), 8);
    auto runs = store::list_runs(*window.project());
    ASSERT_EQ(runs.size(), 3u);  // differing in one option each
    RunMonitor* monitor = window.open_run(runs[0].id);
    ASSERT_NE(monitor, nullptr);
    ASSERT_TRUE(uitest::wait_for([&] { return !monitor->loading(); }));
    EXPECT_TRUE(monitor->metric_names().contains("metrics/mAP50(B)"));
    const Series* loss = monitor->series(0).find("train/box_loss");
    ASSERT_NE(loss, nullptr);
    EXPECT_EQ(loss->size(), 5u * 20u);  // the example rollback left one point per step
    for (std::size_t i = 1; i < loss->size(); ++i)
        ASSERT_EQ(loss->step[i], loss->step[i - 1] + 1);
    EXPECT_EQ(monitor->progress(0).state, "succeeded");
    EXPECT_EQ(window.tabs()->count(), 2);

    // Deleting the dataset closes its views and editors first (the run's monitor stays).
    ASSERT_NE(window.open_annotation(datasets[0].id, 0), nullptr);
    EXPECT_EQ(window.tabs()->count(), 3);
    window.close_dataset_tabs(datasets[0].id);
    QCoreApplication::processEvents();
    ASSERT_EQ(window.tabs()->count(), 1);
    EXPECT_EQ(qobject_cast<RunMonitor*>(window.tabs()->widget(0)), monitor);
}

// Without a project the window shows the welcome page: its demo entry opens the demo project
// (dataset and example run), and a recent project is one activation away.
TEST(MainWindow, WelcomePageStartsTheDemoAndOpensRecentProjects) {
    MainWindow window;
    window.show();
    ASSERT_EQ(window.tabs()->count(), 1);
    auto* welcome = qobject_cast<WelcomePage*>(window.tabs()->widget(0));
    ASSERT_NE(welcome, nullptr);
    const auto demo_dir = uitest::temp_dir() / "demo";
    // The demo entry opens the demo project in the app's data folder; here, in a test folder.
    QObject::disconnect(welcome, &WelcomePage::open_demo, nullptr, nullptr);
    QObject::connect(
        welcome, &WelcomePage::open_demo, &window, [&] { window.open_demo(qpath(demo_dir)); },
        Qt::QueuedConnection);
    auto* demo = welcome->findChild<QPushButton*>("Open the demo");
    ASSERT_NE(demo, nullptr);
    demo->click();
    ASSERT_TRUE(uitest::wait_for([&] { return window.project() != nullptr; }));
    EXPECT_EQ(window.tabs()->count(), 2);  // its dataset and its run; the welcome page closed
    EXPECT_EQ(qobject_cast<WelcomePage*>(window.tabs()->widget(0)), nullptr);
    const QString demo_file = qpath(window.project()->path());

    // Help ▸ Welcome page lists the demo project as recent; activating it opens it.
    window.show_welcome();
    welcome = qobject_cast<WelcomePage*>(window.tabs()->currentWidget());
    ASSERT_NE(welcome, nullptr);
    ASSERT_GE(welcome->recent_list()->count(), 1);
    EXPECT_EQ(welcome->recent_list()->item(0)->data(Qt::UserRole).toString(), demo_file);
    window.close_project();  // closes every tab, the page among them
    EXPECT_EQ(window.tabs()->count(), 0);
    window.show_welcome();
    welcome = qobject_cast<WelcomePage*>(window.tabs()->currentWidget());
    ASSERT_NE(welcome, nullptr);
    emit welcome->recent_list()->itemActivated(welcome->recent_list()->item(0));
    ASSERT_TRUE(uitest::wait_for([&] { return window.project() != nullptr; }));
    EXPECT_EQ(qpath(window.project()->path()), demo_file);
}

// Help ▸ Keyboard shortcuts lists the menus' shortcuts (run and server actions among them) and
// the views' own keys; Ctrl+Shift+R opens the run table.
TEST(MainWindow, ShortcutsAreListedAndOpenTheirViews) {
    MainWindow window;
    window.show();
    const QString text = window.shortcuts_text();
    for (const char* expected : {"Run table", "Add server", "Check every server", "New run",
                                 "Pause the run", "Cancel the run", "Verified"})
        EXPECT_TRUE(text.contains(expected)) << expected << "\n" << text.toStdString();
    const auto file = uitest::temp_dir() / "keys.crucible";
    ASSERT_TRUE(window.new_project(qpath(file)));
    window.activateWindow();
    ASSERT_TRUE(QTest::qWaitForWindowActive(&window));
    QTest::keyClick(&window, Qt::Key_R, Qt::ControlModifier | Qt::ShiftModifier);
    EXPECT_NE(qobject_cast<RunTableView*>(window.tabs()->currentWidget()), nullptr);
}

// Plain HTTP to another machine sends the token in clear: the studio asks before storing it.
TEST(MainWindowGui, PlainHttpToAnotherMachineIsConfirmedFirst) {
    uitest::clear_server_registry();
    MainWindow window;
    uitest::answer_next_message_box(QMessageBox::No);
    EXPECT_FALSE(window.add_server("far", "http://10.1.2.3:7443", "tok"));
    EXPECT_FALSE(find_server("far"));
    uitest::answer_next_message_box(QMessageBox::Yes);
    EXPECT_TRUE(window.add_server("far", "http://10.1.2.3:7443", "tok"));
    ASSERT_TRUE(find_server("far"));
    // Loopback needs no question (nothing answers a message box here: it would time out).
    EXPECT_TRUE(window.add_server("near", "http://127.0.0.1:7443", "tok"));
    uitest::clear_server_registry();
}
