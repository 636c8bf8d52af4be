// The run table: one row per run with state, options that differ and best/last metric values;
// sorting by a metric, filtering, tag search over metric names, the config diff of two runs,
// overlaid curves of the selected runs, and new events shown after a refresh.
#include <gtest/gtest.h>

#include <algorithm>

#include <QCheckBox>
#include <QLineEdit>
#include <QMessageBox>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>
#include <QTreeWidget>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/options_schema.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "tests/ui/qt_test_env.h"
#include "ui/main_window.h"
#include "ui/options_form.h"
#include "ui/run_monitor.h"
#include "ui/run_setup.h"
#include "ui/run_table.h"

using namespace crucible;
using namespace crucible::ui;

namespace {

constexpr const char* kMap = "metrics/mAP50(B)";

std::vector<Event> curve(std::int64_t first_seq, std::vector<double> maps, const char* state) {
    std::vector<Event> out;
    std::int64_t seq = first_seq;
    for (std::size_t i = 0; i < maps.size(); ++i) {
        const auto step = static_cast<std::int64_t>(i + 1);
        out.push_back(
            make_metric(static_cast<int>(i), step,
                        {{"train/box_loss", 2.0 / static_cast<double>(step)}, {kMap, maps[i]}}));
    }
    out.push_back(make_status(state));
    for (auto& e : out) {
        e.seq = seq;
        e.t = 1000.0 + 10.0 * static_cast<double>(seq);
        ++seq;
    }
    return out;
}

struct RunTableFixture : ::testing::Test {
    std::filesystem::path file = uitest::temp_dir() / "table.crucible";
    std::vector<std::int64_t> ids;
    MainWindow window;

    void SetUp() override {
        {
            auto p = store::Project::create(file);
            struct Row {
                const char* name;
                double lr;
                std::vector<double> maps;
                const char* state;
            };
            for (const Row& r : {Row{"baseline", 0.01, {0.1, 0.3, 0.25}, "succeeded"},
                                 Row{"high lr", 0.05, {0.2, 0.6, 0.5}, "succeeded"},
                                 Row{"broken", 0.5, {0.05}, "failed"}}) {
                store::RunSetup setup{.name = r.name, .task = "detect.yolo"};
                setup.options = {{"epochs", 3}, {"lr0", r.lr}, {"imgsz", 320}};
                const auto id = store::create_run(*p, setup);
                store::append_events(*p, id, curve(0, r.maps, r.state));
                ids.push_back(id);
            }
        }
        window.show();
        ASSERT_TRUE(window.open_project(QString::fromStdString(path_to_utf8(file))));
    }

    // The source-model row of run `id` as shown (through sorting and filtering), -1 if hidden.
    static int shown_row(RunTableView* view, std::int64_t id) {
        for (int r = 0; r < view->proxy()->rowCount(); ++r)
            if (view->proxy()->index(r, 0).data(RunTableModel::kRunIdRole).toLongLong() == id)
                return r;
        return -1;
    }
    static QString shown(RunTableView* view, int row, const QString& header) {
        const int column = view->model()->column_of(header);
        return column < 0 ? QString() : view->proxy()->index(row, column).data().toString();
    }
};

}  // namespace

TEST_F(RunTableFixture, ShowsEveryRunWithItsStateOptionsThatDifferAndBestMetrics) {
    RunTableView* view = window.open_run_table();
    ASSERT_NE(view, nullptr);
    ASSERT_EQ(view->model()->rowCount(), 3);
    // Only lr0 differs between the runs: it is a column, epochs and imgsz are not.
    EXPECT_EQ(view->model()->option_columns(), QStringList{"lr0"});
    const int high = shown_row(view, ids[1]);
    EXPECT_EQ(shown(view, high, "Name"), "high lr");
    EXPECT_EQ(shown(view, high, "State"), "succeeded");
    EXPECT_EQ(shown(view, high, "lr0"), "0.05");
    EXPECT_EQ(shown(view, high, kMap), "0.6");                 // highest mAP
    EXPECT_EQ(shown(view, high, "train/box_loss"), "0.6667");  // lowest loss
    EXPECT_EQ(shown(view, high, "Duration"), "30s");           // 4 events 10 s apart
    EXPECT_EQ(shown(view, shown_row(view, ids[2]), "State"), "failed");

    view->last_values_box()->setChecked(true);
    EXPECT_EQ(shown(view, shown_row(view, ids[1]), kMap), "0.5");
    view->hparams_box()->setChecked(false);
    EXPECT_EQ(view->model()->column_of("lr0"), -1);
}

TEST_F(RunTableFixture, SortsByAMetricAndFiltersRunsAndMetricNames) {
    RunTableView* view = window.open_run_table();
    const int map_column = view->model()->column_of(kMap);
    ASSERT_GE(map_column, 0);
    view->table()->sortByColumn(map_column, Qt::DescendingOrder);
    EXPECT_EQ(shown(view, 0, "Name"), "high lr");
    EXPECT_EQ(shown(view, 1, "Name"), "baseline");
    view->table()->sortByColumn(map_column, Qt::AscendingOrder);
    EXPECT_EQ(shown(view, 0, "Name"), "broken");

    view->filter_edit()->setText("FAILED");
    ASSERT_EQ(view->proxy()->rowCount(), 1);
    EXPECT_EQ(shown(view, 0, "Name"), "broken");
    view->filter_edit()->clear();
    EXPECT_EQ(view->proxy()->rowCount(), 3);

    view->tag_edit()->setText("map");  // case-insensitive
    EXPECT_EQ(view->model()->metric_columns(), QStringList{kMap});
    view->tag_edit()->setText("loss|mAP50\\(");
    EXPECT_EQ(view->model()->metric_columns().size(), 2);
    view->tag_edit()->setText("mAP50(");  // not a regular expression: plain text
    EXPECT_EQ(view->model()->metric_columns(), QStringList{kMap});
}

TEST_F(RunTableFixture, ConfigDiffOfTwoRunsShowsOnlyWhatDiffers) {
    RunTableView* view = window.open_run_table();
    view->select_runs({ids[0], ids[1]});
    ASSERT_EQ(view->selected_run_ids().size(), 2u);
    const auto& a = view->model()->run(0);
    const auto& b = view->model()->run(1);
    EXPECT_EQ(config_diff_text(a, b), "lr0: 0.01 → 0.05");
    EXPECT_EQ(config_diff_text(a, a), "baseline and baseline have the same options");
}

TEST_F(RunTableFixture, SelectedRunsOpenOverlaidInOneMonitor) {
    RunTableView* view = window.open_run_table();
    view->select_runs({ids[0], ids[2]});
    const int tabs = window.tabs()->count();
    emit view->open_runs(view->selected_run_ids());
    ASSERT_EQ(window.tabs()->count(), tabs + 1);
    auto* monitor = qobject_cast<RunMonitor*>(window.tabs()->currentWidget());
    ASSERT_NE(monitor, nullptr);
    EXPECT_EQ(monitor->run_count(), 2);
}

TEST_F(RunTableFixture, RunsNodeOpensOneTableThatFollowsNewEvents) {
    QTreeWidgetItem* runs = nullptr;
    for (int i = 0; i < window.project_tree()->topLevelItemCount(); ++i)
        if (window.project_tree()->topLevelItem(i)->text(0) == "Runs")
            runs = window.project_tree()->topLevelItem(i);
    ASSERT_NE(runs, nullptr);
    emit window.project_tree()->itemActivated(runs, 0);
    auto* view = qobject_cast<RunTableView*>(window.tabs()->currentWidget());
    ASSERT_NE(view, nullptr);
    EXPECT_EQ(window.open_run_table(), view);  // one table, brought forward

    // A followed run's new events reach the table on refresh, selection kept.
    view->select_runs({ids[2]});
    Event late = make_metric(1, 2, {{kMap, 0.9}});
    late.seq = 10;
    late.t = 2000;
    window.keep_events(ids[2], {late});
    window.refresh_tree();
    EXPECT_EQ(shown(view, shown_row(view, ids[2]), kMap), "0.9");
    EXPECT_EQ(view->selected_run_ids(), std::vector<std::int64_t>{ids[2]});
}

// Clone…: a run setup tab filled like the run (task, options, name), ready to change and start.
TEST_F(RunTableFixture, CloneFillsANewRunSetupLikeTheRun) {
    OptionSchema schema("detect.yolo", "detection");
    schema.add(option_spec("epochs", OptionType::Integer, 100, "epochs"));
    schema.add(option_spec("lr0", OptionType::Number, 0.01, "learning rate"));
    schema.add(option_spec("imgsz", OptionType::Integer, 640, "image size"));
    Json task = schema.to_json();
    task["task"] = "detect.yolo";
    window.set_task_schemas(Json::array({task}));
    RunSetupView* view = window.clone_run(ids[1]);
    ASSERT_NE(view, nullptr);
    EXPECT_EQ(view->current_task(), "detect.yolo");
    const Json values = view->form()->values();
    EXPECT_EQ(values.at("lr0"), 0.05);
    EXPECT_EQ(values.at("epochs"), 3);
    EXPECT_EQ(values.at("imgsz"), 320);
    const auto clone = view->create_run();
    ASSERT_GE(clone, 0) << view->error_text().toStdString();
    const auto info = store::get_run(*window.project(), clone);
    EXPECT_EQ(info.setup.name, "high lr (clone)");
    EXPECT_EQ(info.setup.options.at("lr0"), 0.05);

    // A task this studio does not know: said so, nothing filled.
    window.set_task_schemas(Json::array());
    RunSetupView* unknown = window.clone_run(ids[0]);
    ASSERT_NE(unknown, nullptr);
    EXPECT_TRUE(unknown->error_text().contains("does not know the task"))
        << unknown->error_text().toStdString();
}

// Deleting a run: marked "deleting" at once, its history removed in slices between turns of the
// event loop, then the record; a deletion a closed studio left unfinished goes on at the next open.
TEST_F(RunTableFixture, DeletedRunsGoInSlicesAndFinishOnTheNextOpen) {
    std::vector<Event> many;
    for (int i = 0; i < 3 * static_cast<int>(MainWindow::kDeleteSlice); ++i) {
        Event e = make_metric(0, i + 1, {{"train/box_loss", 1.0}});
        e.seq = 100 + i;
        e.t = 5000 + i;
        many.push_back(e);
    }
    store::append_events(*window.project(), ids[0], many);
    uitest::answer_next_message_box(QMessageBox::Yes);
    window.delete_run_asking(ids[0]);
    EXPECT_TRUE(window.deleting_runs());
    EXPECT_EQ(store::get_run(*window.project(), ids[0]).setup.state, store::kDeletingState);
    ASSERT_TRUE(uitest::wait_for([&] { return !window.deleting_runs(); }, 30000));
    EXPECT_THROW(store::get_run(*window.project(), ids[0]), InputError);

    // A run left half-deleted by a studio that closed: the next open finishes it.
    store::update_run_state(*window.project(), ids[1], store::kDeletingState);
    window.close_project();
    ASSERT_TRUE(window.open_project(QString::fromStdString(path_to_utf8(file))));
    ASSERT_TRUE(uitest::wait_for([&] { return !window.deleting_runs(); }, 30000));
    EXPECT_THROW(store::get_run(*window.project(), ids[1]), InputError);
    EXPECT_EQ(store::list_runs(*window.project()).size(), 1u);
}

TEST_F(RunTableFixture, SelectedRunsExportAsTidyCsvForSpreadsheets) {
    auto* table = window.open_run_table();
    ASSERT_NE(table, nullptr);
    table->select_runs({ids[0], ids[1]});
    // What the menu's action hands on (the window asks for a file, then writes two).
    const auto asked = table->selected_run_ids();
    ASSERT_EQ(asked.size(), 2u);
    const auto dir = uitest::temp_dir() / "csv";
    std::filesystem::create_directories(dir);
    const QString target = QString::fromStdString(path_to_utf8(dir / "metrics.csv"));
    ASSERT_TRUE(window.export_runs_csv(asked, target));
    const std::string csv = read_file_bytes(dir / "metrics.csv");
    EXPECT_EQ(csv.rfind("run_id,run,task,metric,step,epoch,time,value\n", 0), 0u);
    // Two runs of three points each, two metrics: twelve rows.
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 13) << csv;
    EXPECT_NE(csv.find(",high lr,detect.yolo,metrics/mAP50(B),2,1,"), std::string::npos) << csv;
    EXPECT_EQ(csv.find(",broken,"), std::string::npos) << "not selected";
    EXPECT_TRUE(std::filesystem::exists(dir / "metrics_per_class.csv"));
}
