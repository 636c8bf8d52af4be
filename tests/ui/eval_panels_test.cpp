// The run monitor's validation panels: a per-class table from the latest eval event (sortable,
// superseded evaluations dropped), and from a run's validation report (the val_metrics.json
// shape) a confusion-matrix heat map and precision/recall curves; the report is fetched from the
// agent through the core/net client when the run succeeds, or read beside a followed
// events.jsonl. Panels exist only once their data arrived.
#include <gtest/gtest.h>

#include <httplib.h>

#include <qcustomplot.h>
#include <QHeaderView>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <cmath>
#include <mutex>
#include <thread>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "tests/support/loopback_server.h"
#include "tests/ui/qt_test_env.h"
#include "ui/eval_panels.h"
#include "ui/run_monitor.h"

using namespace crucible;
using namespace crucible::ui;

namespace {

Json per_class_rows() {
    // class, name, images, instances, p, r, map50, map50_95
    return Json::array({
        {{"class", 0},
         {"name", "cat"},
         {"images", 10},
         {"instances", 14},
         {"p", 0.9},
         {"r", 0.8},
         {"map50", 0.71},
         {"map50_95", 0.5}},
        {{"class", 1},
         {"name", "dog"},
         {"images", 7},
         {"instances", 9},
         {"p", 0.6},
         {"r", 0.55},
         {"map50", 0.93},
         {"map50_95", 0.61}},
        {{"class", 2},
         {"name", "bird"},
         {"images", 3},
         {"instances", 30},
         {"p", 0.3},
         {"r", nullptr},
         {"map50", 0.12},
         {"map50_95", 0.05}},
    });
}

std::vector<double> recall_grid(int n) {
    std::vector<double> r;
    for (int i = 0; i < n; ++i)
        r.push_back(static_cast<double>(i) / (n - 1));
    return r;
}

std::vector<double> precision_curve(double start, int n) {
    std::vector<double> p;
    for (int i = 0; i < n; ++i)
        p.push_back(start * (1.0 - 0.5 * static_cast<double>(i) / (n - 1)));
    return p;
}

// The shape of the validation report a detection run writes as artifacts/val_metrics.json.
Json validation_report() {
    const int n = 11;
    Json matrix = Json::array({Json::array({12, 1, 0, 3}), Json::array({2, 8, 1, 0}),
                               Json::array({0, 0, 20, 4}), Json::array({0, 0, 9, 0})});
    return {{"metrics/precision(B)", 0.6},
            {"metrics/recall(B)", 0.5},
            {"metrics/mAP50(B)", 0.587},
            {"metrics/mAP50-95(B)", 0.387},
            {"fitness", 0.41},
            {"images", 20},
            {"instances", 53},
            {"best_confidence", 0.31},
            {"per_class", per_class_rows()},
            {"confusion_matrix",
             {{"names", {"cat", "dog", "bird", "background"}},
              {"rows", "predicted"},
              {"columns", "true"},
              {"matrix", matrix},
              {"conf", 0.25},
              {"iou", 0.45}}},
            {"pr_curve",
             {{"recall", recall_grid(n)},
              {"classes",
               Json::array(
                   {{{"class", 0}, {"name", "cat"}, {"precision", precision_curve(1.0, n)}},
                    {{"class", 1}, {"name", "dog"}, {"precision", precision_curve(0.8, n)}},
                    {{"class", 2}, {"name", "bird"}, {"precision", precision_curve(0.4, n)}}})}}}};
}

Event numbered(Event e, std::int64_t seq) {
    e.seq = seq;
    e.t = 1000.0 + static_cast<double>(seq);
    return e;
}

QStringList column(const PerClassTable& table, int col) {
    QStringList out;
    for (int r = 0; r < table.row_count(); ++r)
        out << table.text(r, col);
    return out;
}

}  // namespace

TEST(EvalPanels, PerClassTableShowsTheLatestEvalRowsAndSorts) {
    RunMonitor monitor;
    monitor.resize(1000, 700);
    monitor.show();
    const int run = monitor.add_run("r");
    monitor.apply_events(run, {numbered(make_metric(0, 10, {{"train/box_loss", 1.0}}), 0)});
    monitor.redraw_now();
    EXPECT_EQ(monitor.per_class_table(), nullptr);  // no eval with rows yet
    EXPECT_EQ(monitor.confusion_panel(), nullptr);
    EXPECT_EQ(monitor.pr_curve_panel(), nullptr);

    Json older = per_class_rows();
    older[0]["map50"] = 0.2;
    monitor.apply_events(
        run, {numbered(make_eval(1, 100, {{"metrics/mAP50(B)", 0.3}}, older), 1),
              numbered(make_eval(2, 200, {{"metrics/mAP50(B)", 0.6}}, per_class_rows()), 2)});
    monitor.redraw_now();
    PerClassTable* table = monitor.per_class_table();
    ASSERT_NE(table, nullptr);
    ASSERT_EQ(table->row_count(), 3);
    // Rows in the event's order, the values of the latest eval.
    EXPECT_EQ(column(*table, PerClassTable::kClass), QStringList({"cat", "dog", "bird"}));
    EXPECT_EQ(table->text(0, PerClassTable::kMap50), "0.710");
    EXPECT_EQ(table->text(1, PerClassTable::kImages), "7");
    EXPECT_EQ(table->text(2, PerClassTable::kInstances), "30");
    EXPECT_EQ(table->text(2, PerClassTable::kR), "—");  // null (NaN) in the event
    EXPECT_EQ(table->text(0, PerClassTable::kP), "0.900");
    EXPECT_TRUE(table->source().contains("epoch 2")) << table->source().toStdString();

    table->sort_by(PerClassTable::kMap50, Qt::DescendingOrder);
    EXPECT_EQ(column(*table, PerClassTable::kClass), QStringList({"dog", "cat", "bird"}));
    table->sort_by(PerClassTable::kInstances, Qt::AscendingOrder);
    EXPECT_EQ(column(*table, PerClassTable::kClass), QStringList({"dog", "cat", "bird"}));
    table->sort_by(PerClassTable::kP, Qt::AscendingOrder);
    EXPECT_EQ(column(*table, PerClassTable::kClass), QStringList({"bird", "dog", "cat"}));
    table->sort_by(PerClassTable::kClass, Qt::AscendingOrder);
    EXPECT_EQ(column(*table, PerClassTable::kClass), QStringList({"bird", "cat", "dog"}));
    // A click on a header sorts too.
    auto* tabs = monitor.findChild<QTabWidget*>();
    ASSERT_NE(tabs, nullptr);
    ASSERT_GE(tabs->indexOf(table), 0);  // the table has its tab now
    tabs->setCurrentWidget(table);
    QTest::qWait(50);  // laid out, so the header knows where its sections are
    QHeaderView* header = table->view()->horizontalHeader();
    const int x = header->sectionViewportPosition(PerClassTable::kMap50_95) + 5;
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, QPoint(x, header->height() / 2));
    const Qt::SortOrder order = header->sortIndicatorOrder();
    EXPECT_EQ(header->sortIndicatorSection(), PerClassTable::kMap50_95);
    EXPECT_EQ(column(*table, PerClassTable::kClass), order == Qt::AscendingOrder
                                                         ? QStringList({"bird", "cat", "dog"})
                                                         : QStringList({"dog", "cat", "bird"}));

    // A rollback before step 200 supersedes the latest eval: the earlier one shows again, in the
    // sort order the person chose.
    monitor.apply_events(run, {numbered(make_rollback(150), 3)});
    monitor.redraw_now();
    table->sort_by(PerClassTable::kClass, Qt::DescendingOrder);
    EXPECT_EQ(column(*table, PerClassTable::kClass), QStringList({"dog", "cat", "bird"}));
    EXPECT_EQ(table->text(1, PerClassTable::kMap50), "0.200");
    EXPECT_TRUE(table->source().contains("epoch 1")) << table->source().toStdString();
}

TEST(EvalPanels, ConfusionMatrixShowsTheReportCellsRawAndNormalized) {
    RunMonitor monitor;
    monitor.resize(1000, 700);
    monitor.show();
    const int run = monitor.add_run("r");
    monitor.set_validation_report(run, validation_report());
    ConfusionMatrixPanel* cm = monitor.confusion_panel();
    ASSERT_NE(cm, nullptr);
    ASSERT_EQ(cm->data().size(), 4);
    EXPECT_EQ(cm->axis_label(0), "cat");
    EXPECT_EQ(cm->axis_label(2), "bird");
    EXPECT_EQ(cm->axis_label(3), "background");
    const Json m = validation_report()["confusion_matrix"]["matrix"];
    EXPECT_FALSE(cm->normalized());
    for (int p = 0; p < 4; ++p)
        for (int t = 0; t < 4; ++t) {
            const double want = m[static_cast<std::size_t>(p)][static_cast<std::size_t>(t)];
            EXPECT_DOUBLE_EQ(cm->painted_value(p, t), want) << p << "," << t;
            EXPECT_DOUBLE_EQ(cm->value(p, t), want) << p << "," << t;
        }
    // Normalized: each true class (column) sums to 1.
    cm->set_normalized(true);
    EXPECT_TRUE(cm->normalized());
    EXPECT_NEAR(cm->painted_value(0, 0), 12.0 / 14.0, 1e-12);  // cat: 12 + 2 of 14
    EXPECT_NEAR(cm->painted_value(1, 0), 2.0 / 14.0, 1e-12);
    EXPECT_NEAR(cm->painted_value(3, 2), 9.0 / 30.0, 1e-12);  // birds missed (background)
    EXPECT_NEAR(cm->painted_value(2, 3), 4.0 / 7.0, 1e-12);   // background called bird
    for (int t = 0; t < 4; ++t) {
        double sum = 0;
        for (int p = 0; p < 4; ++p)
            sum += cm->painted_value(p, t);
        EXPECT_NEAR(sum, 1.0, 1e-12) << t;
    }
    EXPECT_NEAR(cm->color_map()->dataRange().upper, 1.0, 1e-12);
    cm->set_normalized(false);
    EXPECT_DOUBLE_EQ(cm->painted_value(2, 2), 20.0);
    EXPECT_DOUBLE_EQ(cm->color_map()->dataRange().upper, 20.0);
    // The panel's tab exists now; a malformed report is refused with the field named.
    Json bad = validation_report();
    bad["confusion_matrix"]["matrix"][1] = Json::array({1, 2});
    try {
        monitor.set_validation_report(run, bad);
        ADD_FAILURE() << "a 2-value row was accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("confusion_matrix.matrix[1]"), std::string::npos)
            << e.what();
    }
}

TEST(EvalPanels, PrCurvesHaveEveryPointPerClassAndTheMean) {
    RunMonitor monitor;
    monitor.resize(1000, 700);
    monitor.show();
    const int run = monitor.add_run("r");
    monitor.set_validation_report(run, validation_report());
    PrCurvePanel* pr = monitor.pr_curve_panel();
    ASSERT_NE(pr, nullptr);
    const Json report = validation_report();
    const auto recall = report["pr_curve"]["recall"].get<std::vector<double>>();
    const Json& classes = report["pr_curve"]["classes"];
    ASSERT_EQ(pr->graph_count(), 4);  // three classes + the mean
    for (int g = 0; g < 3; ++g) {
        const auto precision =
            classes[static_cast<std::size_t>(g)]["precision"].get<std::vector<double>>();
        QCPGraph* graph = pr->plot()->graph(g);
        ASSERT_EQ(graph->data()->size(), static_cast<int>(recall.size())) << g;
        for (int i = 0; i < graph->data()->size(); ++i) {
            EXPECT_DOUBLE_EQ(graph->data()->at(i)->key, recall[static_cast<std::size_t>(i)]);
            EXPECT_DOUBLE_EQ(graph->data()->at(i)->value, precision[static_cast<std::size_t>(i)]);
        }
    }
    EXPECT_TRUE(pr->graph_name(0).startsWith("cat 0.710")) << pr->graph_name(0).toStdString();
    QCPGraph* mean = pr->plot()->graph(pr->mean_graph());
    ASSERT_EQ(mean->data()->size(), static_cast<int>(recall.size()));
    for (int i = 0; i < mean->data()->size(); ++i) {
        double sum = 0;
        for (const auto& c : classes)
            sum += c["precision"][static_cast<std::size_t>(i)].get<double>();
        EXPECT_NEAR(mean->data()->at(i)->value, sum / 3, 1e-12) << i;
    }
    // The legend's all-classes value is the mean of the classes' mAP50.
    EXPECT_TRUE(pr->graph_name(pr->mean_graph()).contains("0.587"))
        << pr->graph_name(pr->mean_graph()).toStdString();
    // The report's per-class rows fill the table when no eval event had any.
    ASSERT_NE(monitor.per_class_table(), nullptr);
    EXPECT_EQ(monitor.per_class_table()->row_count(), 3);
}

// An agent that serves one finished job: its events (an eval with per-class rows, then
// "succeeded"), its artifact list and the report; the monitor fetches the report by itself.
TEST(EvalPanels, SucceededRemoteRunFetchesItsValidationReport) {
    std::mutex mutex;
    std::vector<std::string> requests;
    auto logged = [&](const httplib::Request& req) {
        std::lock_guard<std::mutex> lock(mutex);
        requests.push_back(req.path);
    };
    std::string events;
    for (const Event& e :
         {numbered(make_status("running"), 0),
          numbered(make_eval(1, 50, {{"metrics/mAP50(B)", 0.5}}, per_class_rows()), 1),
          numbered(make_status("succeeded", "finished"), 2)})
        events += "id: " + std::to_string(e.seq) + "\ndata: " + event_to_line(e) + "\n\n";
    test_support::LoopbackServer agent;  // after what its routes use: it stops first
    agent.on(net::routes::kJobEvents, [&](const httplib::Request& req, httplib::Response& res) {
        logged(req);
        res.set_content(events, "text/event-stream");
    });
    agent.on(net::routes::kJobArtifacts, [&](const httplib::Request& req, httplib::Response& res) {
        logged(req);
        res.set_content(
            Json{{"artifacts",
                  Json::array({{{"path", "artifacts/weights/best.safetensors"}, {"size", 10}},
                               {{"path", "artifacts/val_metrics.json"}, {"size", 100}}})}}
                .dump(),
            "application/json");
    });
    agent.on(net::routes::kJobArtifact, [&](const httplib::Request& req, httplib::Response& res) {
        logged(req);
        if (req.matches[2] != "artifacts/val_metrics.json") {
            res.status = 404;
            return;
        }
        res.set_header("ETag", "\"1-1\"");
        res.set_content(validation_report().dump(), "application/json");
    });
    const int port = agent.listen();

    RunMonitor monitor;
    monitor.resize(1000, 700);
    monitor.show();
    const int run = monitor.add_run("remote");
    int loaded = -1;
    QObject::connect(&monitor, &RunMonitor::validation_loaded, [&](int r) { loaded = r; });
    monitor.follow_remote(run, {"http://127.0.0.1:" + std::to_string(port), "tok", ""}, "job1", -1);
    ASSERT_TRUE(uitest::wait_for([&] { return loaded == run; }, 15000))
        << monitor.log_text().toStdString();
    monitor.redraw_now();
    ASSERT_NE(monitor.confusion_panel(), nullptr);
    EXPECT_DOUBLE_EQ(monitor.confusion_panel()->painted_value(0, 0), 12.0);
    ASSERT_NE(monitor.pr_curve_panel(), nullptr);
    EXPECT_EQ(monitor.pr_curve_panel()->graph_count(), 4);
    ASSERT_NE(monitor.per_class_table(), nullptr);
    EXPECT_TRUE(monitor.per_class_table()->source().contains("epoch 1"));  // from the eval
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_NE(std::find(requests.begin(), requests.end(),
                        "/v1/jobs/job1/artifacts/artifacts/val_metrics.json"),
              requests.end());
}

// A local run's events.jsonl: the report beside it is read when the run succeeds.
TEST(EvalPanels, FollowedEventsFileReadsTheReportBesideIt) {
    const auto dir = uitest::temp_dir();
    std::filesystem::create_directories(dir / "artifacts");
    write_file_atomically(dir / "artifacts" / "val_metrics.json", validation_report().dump());
    EventLogWriter writer(dir / "events.jsonl");
    writer.append(make_status("running"));
    RunMonitor monitor;
    int loaded = -1;
    QObject::connect(&monitor, &RunMonitor::validation_loaded, [&](int r) { loaded = r; });
    const int run = monitor.follow_file(dir / "events.jsonl", "local", 50);
    ASSERT_TRUE(uitest::wait_for([&] { return monitor.progress(run).state == "running"; }));
    QTest::qWait(200);
    EXPECT_EQ(loaded, -1);  // still running: not read yet
    EXPECT_EQ(monitor.confusion_panel(), nullptr);
    writer.append(make_status("succeeded"));
    ASSERT_TRUE(uitest::wait_for([&] { return loaded == run; }, 10000))
        << monitor.log_text().toStdString();
    ASSERT_NE(monitor.confusion_panel(), nullptr);
    EXPECT_DOUBLE_EQ(monitor.confusion_panel()->painted_value(3, 2), 9.0);
}
