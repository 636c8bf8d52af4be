// The run monitor: events from every source become chart series with superseded points dropped,
// the charts draw decimated curves, exports write every point, and Pause / Resume / Cancel reach
// the agent through the core/net client.
#include <gtest/gtest.h>

#include <httplib.h>

#include <qcustomplot.h>
#include <QApplication>
#include <QFile>
#include <QImage>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTest>
#include <cmath>
#include <mutex>
#include <thread>

#include "core/base/file_io.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "tests/support/loopback_server.h"
#include "tests/ui/qt_test_env.h"
#include "ui/log_console.h"
#include "ui/run_chart.h"
#include "ui/run_monitor.h"
#include "ui/samples_panel.h"
#include "ui/theme.h"

using namespace crucible;
using namespace crucible::ui;

namespace {

// A long run with a rollback every 10,000 events: points that a later rollback supersedes get
// values >= 1000, kept points values < 1000, so a plotted superseded point is visible.
std::vector<Event> long_run(std::size_t count) {
    std::vector<Event> events;
    events.reserve(count);
    std::int64_t step = 0;
    std::int64_t seq = 0;
    while (events.size() < count) {
        const std::size_t block = std::min<std::size_t>(10000, count - events.size());
        const bool rolls_back = events.size() + block < count;
        const std::int64_t block_start = step;
        for (std::size_t i = 0; i + (rolls_back ? 1 : 0) < block; ++i) {
            ++step;
            // The last 500 steps of a block that rolls back are superseded.
            const bool superseded =
                rolls_back && step > block_start + static_cast<std::int64_t>(block) - 501;
            Event e = make_metric(
                static_cast<int>(step / 1000), step,
                {{"train/loss", superseded ? 1000.0 + static_cast<double>(i % 7)
                                           : 1.0 + std::sin(static_cast<double>(step) * 1e-3)}});
            e.seq = seq++;
            e.t = 1e9 + static_cast<double>(seq);
            events.push_back(std::move(e));
        }
        if (rolls_back) {
            Event rb = make_rollback(block_start + static_cast<std::int64_t>(block) - 501);
            rb.seq = seq++;
            rb.t = 1e9 + static_cast<double>(seq);
            events.push_back(rb);
            step = block_start + static_cast<std::int64_t>(block) - 501;
        }
    }
    return events;
}

}  // namespace

TEST(RunMonitor, HundredThousandEventsRollbackDropsSupersededPoints) {
    const auto events = long_run(100000);
    RunMonitor monitor;
    monitor.resize(1200, 800);
    monitor.show();
    const int run = monitor.add_run("long");
    monitor.apply_events(run, events);
    monitor.redraw_now();

    // Reference: the events with superseded points dropped (core/base's rules).
    std::vector<double> expected_steps, expected_values;
    for (const auto& e : drop_superseded(events)) {
        if (e.kind != event_kind::kMetric) continue;
        expected_steps.push_back(static_cast<double>(e.step()));
        expected_values.push_back(e.fields["values"]["train/loss"].get<double>());
    }
    const Series* s = monitor.series(run).find("train/loss");
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(s->size(), expected_steps.size());
    EXPECT_EQ(s->step, expected_steps);
    EXPECT_EQ(s->value, expected_values);
    for (double v : s->value)
        ASSERT_LT(v, 1000.0);

    ASSERT_TRUE(monitor.shown_metrics().contains("train/loss"));
    RunChart* chart = monitor.chart("train/loss");
    ASSERT_NE(chart, nullptr);
    // Raw and smoothed graphs: decimated to a few points per pixel column, none superseded.
    const int drawn = chart->drawn_points(0);
    EXPECT_GT(drawn, 100);
    EXPECT_LT(drawn, 4 * 1200 + 8);
    QCustomPlot* plot = chart->plot();
    ASSERT_GE(plot->graphCount(), 1);
    for (int g = 0; g < plot->graphCount(); ++g) {
        auto data = plot->graph(g)->data();
        ASSERT_GT(data->size(), 0);
        for (auto it = data->constBegin(); it != data->constEnd(); ++it)
            ASSERT_LT(it->value, 1000.0) << "graph " << g << " key " << it->key;
        EXPECT_DOUBLE_EQ((data->constEnd() - 1)->key, expected_steps.back());
    }
}

TEST(RunMonitor, ControlsChangeTheCurvesAndExportsWriteEveryPoint) {
    RunMonitor monitor;
    monitor.resize(900, 600);
    monitor.show();
    const int a = monitor.add_run("a");
    const int b = monitor.add_run("b");
    std::vector<Event> ea, eb;
    for (int i = 1; i <= 50; ++i) {
        Event e = make_metric(i / 10, i, {{"train/loss", 100.0 / i}});
        e.seq = i;
        e.t = 1000.0 + 60.0 * i;
        ea.push_back(e);
        e.fields["values"]["train/loss"] = 200.0 / i;
        eb.push_back(e);
    }
    monitor.apply_events(a, ea);
    monitor.apply_events(b, eb);
    monitor.redraw_now();
    RunChart* chart = monitor.chart("train/loss");
    ASSERT_NE(chart, nullptr);
    EXPECT_EQ(chart->drawn_points(0), 50);
    EXPECT_EQ(chart->drawn_points(1), 50);
    EXPECT_EQ(chart->plot()->graphCount(), 4);  // raw + smoothed per run

    monitor.set_smoothing(0);
    EXPECT_EQ(chart->plot()->graphCount(), 2);
    EXPECT_DOUBLE_EQ(chart->plot()->graph(0)->data()->at(0)->value, 100.0);
    monitor.set_log_y(true);
    EXPECT_EQ(chart->plot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
    monitor.set_x_axis(XAxis::WallTime);
    EXPECT_DOUBLE_EQ((chart->plot()->graph(0)->data()->constEnd() - 1)->key, 49.0);  // minutes
    monitor.set_x_axis(XAxis::Epoch);
    EXPECT_DOUBLE_EQ((chart->plot()->graph(0)->data()->constEnd() - 1)->key, 5.0);
    monitor.set_x_axis(XAxis::Step);

    // Hover read-out names both runs with their exact values at the nearest step.
    const QString text = chart->readout_at(10.2);
    EXPECT_TRUE(text.contains("a: step 10")) << text.toStdString();
    EXPECT_TRUE(text.contains("= 10 ")) << text.toStdString();
    EXPECT_TRUE(text.contains("b: step 10, epoch 1 = 20")) << text.toStdString();

    const auto dir = uitest::temp_dir();
    const QStringList files = monitor.export_all(QString::fromStdString(path_to_utf8(dir)));
    ASSERT_EQ(files.size(), 2) << files.join(",").toStdString();
    QFile csv(QString::fromStdString(path_to_utf8(dir / "train_loss.csv")));
    ASSERT_TRUE(csv.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(csv.readAll()).split('\n', Qt::SkipEmptyParts);
    EXPECT_EQ(lines.size(), 1 + 100);
    EXPECT_TRUE(lines[1].startsWith("a,train/loss,1,0,")) << lines[1].toStdString();
    QImage png(QString::fromStdString(path_to_utf8(dir / "train_loss.png")));
    EXPECT_EQ(png.width(), 1200);
}

TEST(RunMonitor, ProgressEtaStateAndAlarms) {
    RunMonitor monitor;
    const int r = monitor.add_run("r");
    std::vector<Event> events = {make_status("running"),
                                 make_progress(120, 1600, 3, 100, 41.2, 532),
                                 make_alarm("nan_loss", "loss is NaN at step 120")};
    for (std::size_t i = 0; i < events.size(); ++i)
        events[i].seq = static_cast<std::int64_t>(i);
    monitor.apply_events(r, events);
    monitor.redraw_now();
    EXPECT_EQ(monitor.progress(r).step, 120);
    EXPECT_EQ(monitor.progress_text(), "step 120/1600 · epoch 3/100 · 41.2 it/s · ETA 8m 52s");
    EXPECT_EQ(monitor.progress(r).alarms.size(), 1);
    EXPECT_TRUE(monitor.log_text().contains("loss is NaN"));
    Event failed = make_status("failed", "out of memory at batch 64");
    failed.seq = 10;
    monitor.apply_events(r, {failed});
    EXPECT_FALSE(monitor.progress_text().contains("ETA"));
    EXPECT_EQ(monitor.progress(r).reason, "out of memory at batch 64");
    // A malformed event from outside is skipped with a message, never a crash.
    Event bad;
    bad.seq = 11;
    bad.kind = event_kind::kProgress;
    bad.fields = {{"step", "many"}, {"total_steps", Json::array()}};
    Event bad_metric = make_metric(0, 5, {{"train/loss", 1.0}});
    bad_metric.seq = 12;
    bad_metric.fields["epoch"] = "first";
    monitor.apply_events(r, {bad, bad_metric});
    EXPECT_TRUE(monitor.log_text().contains("event 11 skipped"))
        << monitor.log_text().toStdString();
    EXPECT_EQ(monitor.progress(r).step, 120);
    EXPECT_EQ(format_duration(3725), "1h 02m");
    EXPECT_EQ(format_duration(-1), "—");
}

TEST(RunMonitor, StoreRunAndGrowingEventsFile) {
    const auto dir = uitest::temp_dir();
    auto project = store::Project::create(dir / "p.crucible");
    store::RunSetup setup;
    setup.name = "stored";
    setup.task = "toy";
    const auto id = store::create_run(*project, setup);
    std::vector<Event> stored;
    for (int i = 0; i < 20; ++i) {
        Event e = make_metric(0, i + 1, {{"val/loss", 1.0 * i}});
        e.seq = i;
        e.t = 100.0 + i;
        stored.push_back(e);
    }
    Event rb = make_rollback(10);
    rb.seq = 20;
    rb.t = 200;
    stored.push_back(rb);
    store::append_events(*project, id, stored);
    RunMonitor monitor;
    const int r = monitor.add_store_run(*project, id, "stored");
    // Read in the background: the run fills once its stored events are in.
    ASSERT_TRUE(uitest::wait_for([&] { return !monitor.loading(); }));
    ASSERT_NE(monitor.series(r).find("val/loss"), nullptr);
    EXPECT_EQ(monitor.series(r).find("val/loss")->size(), 10u);

    const auto file = dir / "events.jsonl";
    EventLogWriter writer(file);
    for (int i = 0; i < 5; ++i)
        writer.append(make_metric(0, i + 1, {{"train/loss", 2.0}}));
    const int f = monitor.follow_file(file, "file", 50);
    auto size = [&] {
        const Series* s = monitor.series(f).find("train/loss");
        return s ? s->size() : 0u;
    };
    ASSERT_TRUE(uitest::wait_for([&] { return size() == 5u; })) << size();
    for (int i = 5; i < 12; ++i)
        writer.append(make_metric(0, i + 1, {{"train/loss", 1.0}}));
    writer.append(make_rollback(8));
    ASSERT_TRUE(uitest::wait_for([&] { return size() == 8u; })) << size();
}

TEST(RunMonitor, PauseResumeCancelCallTheAgent) {
    std::mutex mutex;
    std::vector<std::string> calls;
    test_support::LoopbackServer agent;  // after what its routes use: it stops first
    for (const auto* route :
         {&net::routes::kPauseJob, &net::routes::kResumeJob, &net::routes::kCancelJob})
        agent.on(*route, [&](const httplib::Request& req, httplib::Response& res) {
            std::lock_guard<std::mutex> lock(mutex);
            calls.push_back(req.path + " " + req.get_header_value("Authorization"));
            res.set_content(R"({"state":"ok"})", "application/json");
        });
    const int port = agent.listen();
    auto count = [&] {
        std::lock_guard<std::mutex> lock(mutex);
        return calls.size();
    };

    RunMonitor monitor;
    monitor.show();
    auto* pause = monitor.findChild<QPushButton*>("pause");
    auto* resume = monitor.findChild<QPushButton*>("resume");
    auto* cancel = monitor.findChild<QPushButton*>("cancel");
    ASSERT_TRUE(pause && resume && cancel);
    EXPECT_FALSE(pause->isEnabled());  // no job yet
    net::RemoteEndpoint ep;
    ep.url = "http://127.0.0.1:" + std::to_string(port);
    ep.token = "secret-token";
    monitor.set_remote_job(ep, "job1");
    const int run = monitor.add_run("job1");
    ASSERT_TRUE(pause->isEnabled());
    int finished = 0;
    QObject::connect(&monitor, &RunMonitor::request_finished,
                     [&](const QString&, bool ok, const QString&) { finished += ok ? 1 : 100; });
    QTest::mouseClick(pause, Qt::LeftButton);
    ASSERT_TRUE(uitest::wait_for([&] { return finished == 1; })) << finished;
    QTest::mouseClick(resume, Qt::LeftButton);
    ASSERT_TRUE(uitest::wait_for([&] { return finished == 2; })) << finished;
    QTest::mouseClick(cancel, Qt::LeftButton);
    ASSERT_TRUE(uitest::wait_for([&] { return finished == 3; })) << finished;
    ASSERT_EQ(count(), 3u);
    EXPECT_EQ(calls[0], "/v1/jobs/job1/pause Bearer secret-token");
    EXPECT_EQ(calls[1], "/v1/jobs/job1/resume Bearer secret-token");
    EXPECT_EQ(calls[2], "/v1/jobs/job1/cancel Bearer secret-token");
    EXPECT_TRUE(monitor.log_text().contains("cancel accepted"));
    // Accepted: the run is canceling until its status says how it ended; nothing more is offered.
    EXPECT_FALSE(pause->isEnabled() || resume->isEnabled() || cancel->isEnabled());
    EXPECT_EQ(cancel->toolTip(), "the run is being canceled");
    Event canceled = make_status("canceled", "canceled by request");
    canceled.seq = 0;
    monitor.apply_events(run, {canceled});
    EXPECT_FALSE(cancel->isEnabled());
    EXPECT_EQ(cancel->toolTip(), "the run is canceled");
}

// Charts take their colours from the palette and follow the theme: no white chart in a dark
// studio, and back to dark axes on a light one.
TEST(RunChart, FollowsTheThemesPalette) {
    auto* app = qobject_cast<QApplication*>(QCoreApplication::instance());
    ASSERT_NE(app, nullptr);
    RunChart chart(QStringLiteral("train/loss"));
    chart.show();
    apply_theme(*app, Theme::Dark);
    QCoreApplication::processEvents();
    const QColor dark_text = app->palette().color(QPalette::Text);
    EXPECT_EQ(chart.plot()->xAxis->tickLabelColor(), dark_text);
    EXPECT_EQ(chart.plot()->yAxis->basePen().color(), dark_text);
    EXPECT_EQ(chart.plot()->axisRect()->backgroundBrush().color(),
              app->palette().color(QPalette::Base));
    apply_theme(*app, Theme::Light);
    QCoreApplication::processEvents();
    EXPECT_EQ(chart.plot()->xAxis->tickLabelColor(), app->palette().color(QPalette::Text));
    EXPECT_NE(chart.plot()->xAxis->tickLabelColor(), dark_text);
}

// Logs are in the system's fixed-width font, so their columns line up as in a terminal.
TEST(RunMonitor, LogsUseTheFixedWidthFont) {
    RunMonitor monitor;
    LogConsole console;
    const auto logs = monitor.findChildren<QPlainTextEdit*>();
    ASSERT_FALSE(logs.isEmpty());
    for (const QPlainTextEdit* log : logs)
        EXPECT_EQ(log->font(), fixed_width_font()) << log->font().family().toStdString();
    EXPECT_EQ(console.font(), fixed_width_font());
}

// Pause, Resume and Cancel are offered only where the run's state allows them (the rules of
// core/base/job_state.h, which the agent's scheduler follows too): a finished run offers none.
TEST(RunMonitor, ControlsFollowTheRunsState) {
    RunMonitor monitor;
    auto* pause = monitor.findChild<QPushButton*>("pause");
    auto* resume = monitor.findChild<QPushButton*>("resume");
    auto* cancel = monitor.findChild<QPushButton*>("cancel");
    ASSERT_TRUE(pause && resume && cancel);
    net::RemoteEndpoint ep;
    ep.url = "http://127.0.0.1:9";
    monitor.set_remote_job(ep, "job1");
    const int run = monitor.add_run("r");
    auto enabled = [&] {
        return std::vector<bool>{pause->isEnabled(), resume->isEnabled(), cancel->isEnabled()};
    };
    EXPECT_EQ(enabled(), (std::vector<bool>{true, true, true}));  // no state yet: the agent decides
    std::int64_t seq = 0;
    auto status = [&](const char* state) {
        Event e = make_status(state);
        e.seq = seq++;
        monitor.apply_events(run, {e});
    };
    status("running");
    EXPECT_EQ(enabled(), (std::vector<bool>{true, false, true}));
    status("paused");
    EXPECT_EQ(enabled(), (std::vector<bool>{false, true, true}));
    status("interrupted");
    EXPECT_EQ(enabled(), (std::vector<bool>{true, true, true}));
    status("succeeded");
    EXPECT_EQ(enabled(), (std::vector<bool>{false, false, false}));
    EXPECT_EQ(cancel->toolTip(), "the run is succeeded");
}

// A queued run's bar says "queued", not "0%"; once steps are counted it shows the percentage.
// Ctrl+Shift+P / U / X press Pause, Resume and Cancel of the monitor on screen.
TEST(RunMonitor, QueuedRunSaysSoAndShortcutsPressTheControls) {
    RunMonitor monitor;
    monitor.show();
    monitor.activateWindow();
    ASSERT_TRUE(QTest::qWaitForWindowActive(&monitor));
    net::RemoteEndpoint ep;
    ep.url = "http://127.0.0.1:9";
    monitor.set_remote_job(ep, "job1");
    const int run = monitor.add_run("r");
    std::int64_t seq = 0;
    auto apply = [&](Event e) {
        e.seq = seq++;
        monitor.apply_events(run, {e});
        monitor.redraw_now();
    };
    apply(make_status("queued"));
    EXPECT_EQ(monitor.progress_bar_text(), "queued");
    apply(make_status("running"));
    EXPECT_EQ(monitor.progress_bar_text(), "starting");
    apply(make_progress(25, 100, 1, 4, 10.0, 30.0));
    EXPECT_EQ(monitor.progress_bar_text(), "25%");

    auto* pause = monitor.findChild<QPushButton*>("pause");
    auto* cancel = monitor.findChild<QPushButton*>("cancel");
    int paused = 0, canceled = 0;
    QObject::connect(pause, &QPushButton::clicked, [&] { ++paused; });
    QObject::connect(cancel, &QPushButton::clicked, [&] { ++canceled; });
    ASSERT_TRUE(pause->isEnabled() && pause->isVisible());
    // A button's shortcut animates a click: it lands a moment later.
    QTest::keyClick(&monitor, Qt::Key_P, Qt::ControlModifier | Qt::ShiftModifier);
    EXPECT_TRUE(uitest::wait_for([&] { return paused == 1; }, 2000));
    QTest::keyClick(&monitor, Qt::Key_X, Qt::ControlModifier | Qt::ShiftModifier);
    EXPECT_TRUE(uitest::wait_for([&] { return canceled == 1; }, 2000));
}

// `sample` events fill the Samples tab, newest first: generated text as it is, pictures read from
// the run's artifacts (here beside a followed events.jsonl) in the background; an artifact name
// that leaves artifacts/ is refused, and a rollback removes the samples of superseded steps.
TEST(RunMonitor, SamplesShowTextAndPicturesAndFollowRollbacks) {
    const auto dir = uitest::temp_dir();
    std::filesystem::create_directories(dir / "artifacts" / "samples");
    QImage red(48, 32, QImage::Format_RGB32);
    red.fill(Qt::red);
    ASSERT_TRUE(red.save(
        QString::fromStdString(path_to_utf8(dir / "artifacts" / "samples" / "step_100_0.png"))));
    auto at_step = [](Event e, std::int64_t step) {
        e.fields["step"] = step;
        return e;
    };
    EventLogWriter writer(dir / "events.jsonl");
    writer.append(at_step(make_sample({{"prompt", "Q: 2+2?"}, {"text", "A: 4"}}), 50));
    writer.append(at_step(
        make_sample({{"prompt", "a red square"}, {"image", "samples/step_100_0.png"}}), 100));
    writer.append(at_step(make_sample({{"prompt", "escape"}, {"image", "../../secret.png"}}), 100));
    RunMonitor monitor;
    const int run = monitor.follow_file(dir / "events.jsonl", "local", 50);
    (void)run;
    // Both pictures are answered in the background, each in its own time: the red square loads,
    // the escaping name is refused.
    ASSERT_TRUE(uitest::wait_for([&] {
        const SamplesPanel* p = monitor.samples_panel();
        return p && p->entries().size() == 3 && p->entries()[1].image_loaded() &&
               p->list()->count() == 3 && p->list()->item(0)->text().contains("refused");
    })) << monitor.log_text().toStdString();
    const SamplesPanel& panel = *monitor.samples_panel();
    EXPECT_EQ(panel.entries()[0].text, "A: 4");
    EXPECT_EQ(panel.entries()[0].step, 50);
    EXPECT_FALSE(panel.entries()[2].image_loaded());
    ASSERT_EQ(panel.list()->count(), 3);
    EXPECT_TRUE(panel.list()->item(0)->text().contains("refused"))
        << panel.list()->item(0)->text().toStdString();
    EXPECT_FALSE(panel.list()->item(1)->icon().isNull());  // the red square, loaded
    EXPECT_TRUE(panel.list()->item(2)->text().contains("A: 4"));
    // The run resumed from step 60: the samples of step 100 are gone.
    writer.append(make_rollback(60));
    ASSERT_TRUE(uitest::wait_for([&] { return panel.entries().size() == 1u; }))
        << panel.entries().size();
    EXPECT_EQ(panel.entries()[0].prompt, "Q: 2+2?");
}
