// The run monitor's model without a window: a rollback drops the points, evaluations and samples
// it supersedes; progress, epoch and ETA read as the monitor shows them; eval rows, the report
// hint and the log lines come out of apply(); events seen before or malformed are skipped; and
// applying a run in slices gives what applying it at once gives.
#include <gtest/gtest.h>

#include <cmath>

#include "ui/run_model.h"

using namespace crucible;
using namespace crucible::ui;

namespace {

Event numbered(Event e, std::int64_t seq) {
    e.seq = seq;
    e.t = 1000.0 + static_cast<double>(seq);
    return e;
}

Event at_step(Event e, std::int64_t step) {
    e.fields["step"] = step;
    return e;
}

Json per_class_rows(double map50) {
    return Json::array({{{"class", 0},
                         {"name", "cat"},
                         {"images", 4},
                         {"instances", 6},
                         {"p", 0.5},
                         {"r", 0.4},
                         {"map50", map50},
                         {"map50_95", 0.2}}});
}

}  // namespace

TEST(RunModel, RollbackDropsSupersededPointsEvalsAndSamples) {
    RunModel model;
    const int run = model.add_run("r");
    std::vector<Event> events;
    std::int64_t seq = 0;
    for (int step = 1; step <= 10; ++step)
        events.push_back(numbered(make_metric(0, step, {{"train/loss", 10.0 - step}}), seq++));
    events.push_back(
        numbered(make_eval(0, 4, {{"metrics/mAP50(B)", 0.3}}, per_class_rows(0.3)), seq++));
    events.push_back(
        numbered(make_eval(0, 8, {{"metrics/mAP50(B)", 0.5}}, per_class_rows(0.5)), seq++));
    events.push_back(
        numbered(at_step(make_sample({{"prompt", "p"}, {"text", "early"}}), 5), seq++));
    events.push_back(numbered(at_step(make_sample({{"prompt", "p"}, {"text", "late"}}), 9), seq++));
    events.push_back(numbered(make_rollback(6), seq++));
    events.push_back(numbered(make_metric(0, 7, {{"train/loss", 0.5}}), seq++));
    const RunChanges changes = model.apply(run, events);

    EXPECT_TRUE(changes.applied);
    EXPECT_TRUE(changes.new_metrics);
    EXPECT_TRUE(changes.evals);
    const Series* loss = model.series(run).find("train/loss");
    ASSERT_NE(loss, nullptr);
    EXPECT_EQ(loss->step, (std::vector<double>{1, 2, 3, 4, 5, 6, 7}));
    EXPECT_DOUBLE_EQ(loss->value.back(), 0.5);
    const Series* map = model.series(run).find("metrics/mAP50(B)");
    ASSERT_NE(map, nullptr);
    EXPECT_EQ(map->size(), 1u);  // the eval of step 8 is superseded
    ASSERT_EQ(model.evals(run).size(), 1u);
    EXPECT_EQ(model.evals(run)[0].step, 4);
    EXPECT_DOUBLE_EQ(model.evals(run)[0].rows.at(0).map50, 0.3);
    // The sample of step 9 came and went in the same call; older ones after step 6 must go too.
    ASSERT_EQ(changes.samples.size(), 1u);
    EXPECT_EQ(changes.samples[0].text, "early");
    ASSERT_TRUE(changes.rolled_back_to.has_value());
    EXPECT_EQ(*changes.rolled_back_to, 6);
    EXPECT_TRUE(changes.log.join('\n').contains("resumed: points after step 6 replaced"))
        << changes.log.join('\n').toStdString();

    // A later rollback in another call drops what the first one kept.
    const RunChanges again = model.apply(run, {numbered(make_rollback(3), seq++)});
    EXPECT_EQ(model.series(run).find("train/loss")->size(), 3u);
    EXPECT_TRUE(model.evals(run).empty());
    EXPECT_TRUE(again.evals);
    EXPECT_EQ(again.rolled_back_to, std::optional<std::int64_t>(3));
    EXPECT_FALSE(again.new_metrics);
}

TEST(RunModel, ProgressEpochEtaAndTheEndOfARun) {
    RunModel model;
    const int run = model.add_run("r");
    EXPECT_EQ(model.progress_text(run), "");  // no progress yet
    RunChanges changes = model.apply(run, {numbered(make_status("running"), 0),
                                           numbered(make_progress(120, 1600, 3, 100, 41.2, 532), 1),
                                           numbered(make_alarm("gpu_hot", "GPU at 91 C"), 2)});
    const RunProgress& p = model.progress(run);
    EXPECT_EQ(p.step, 120);
    EXPECT_EQ(p.total_steps, 1600);
    EXPECT_EQ(p.epoch, 3);
    EXPECT_EQ(p.epochs, 100);
    EXPECT_DOUBLE_EQ(p.eta_s, 532);
    EXPECT_EQ(p.state, "running");
    EXPECT_EQ(p.alarms, QStringList{"gpu_hot: GPU at 91 C"});
    EXPECT_EQ(model.progress_text(run), "step 120/1600 · epoch 3/100 · 41.2 it/s · ETA 8m 52s");
    EXPECT_FALSE(changes.succeeded);
    EXPECT_EQ(changes.log.size(), 2);  // the state and the alarm

    changes = model.apply(run, {numbered(make_status("succeeded", "finished"), 3)});
    EXPECT_TRUE(changes.succeeded);
    EXPECT_EQ(model.progress(run).reason, "finished");
    EXPECT_EQ(model.progress_text(run), "step 120/1600 · epoch 3/100 · 41.2 it/s");  // no ETA
    EXPECT_EQ(format_duration(3725), "1h 02m");
    EXPECT_EQ(format_duration(2 * 86400 + 4 * 3600), "2d 4h");
    EXPECT_EQ(format_duration(185), "3m 05s");
    EXPECT_EQ(format_duration(std::nan("")), "—");
}

TEST(RunModel, EvalRowsReportHintsAndMetricOrder) {
    RunModel model;
    const int a = model.add_run("a");
    const int b = model.add_run("b");
    RunChanges changes = model.apply(
        a, {numbered(make_eval(1, 50, {{"metrics/mAP50(B)", 0.5}}, per_class_rows(0.5)), 0),
            numbered(make_eval(2, 100, {{"metrics/mAP50(B)", 0.6}}), 1),  // no rows
            numbered(make_artifact("artifacts/val_metrics.json", "report"), 2),
            numbered(make_metric(2, 100, {{"lr/pg0", 0.01}, {"train/box_loss", 1.0}}), 3)});
    ASSERT_EQ(model.evals(a).size(), 1u);
    EXPECT_EQ(model.evals(a)[0].epoch, 1);
    EXPECT_EQ(model.evals(a)[0].rows.at(0).name, "cat");
    EXPECT_TRUE(changes.report_written);
    EXPECT_TRUE(changes.log.join('\n').contains("artifact: artifacts/val_metrics.json"));
    changes =
        model.apply(b, {numbered(make_metric(0, 1, {{"val/cls_loss", 2.0}, {"gpu_mem", 3.0}}), 0),
                        numbered(make_artifact("weights/best.safetensors", "weights"), 1)});
    EXPECT_FALSE(changes.report_written);
    EXPECT_EQ(model.metric_names(), (QStringList{"train/box_loss", "val/cls_loss",
                                                 "metrics/mAP50(B)", "gpu_mem", "lr/pg0"}));
    EXPECT_EQ(model.validation(a), nullptr);
    ValidationData report;
    report.per_class = parse_per_class(per_class_rows(0.7));
    model.set_validation(a, std::move(report));
    ASSERT_NE(model.validation(a), nullptr);
    EXPECT_DOUBLE_EQ(model.validation(a)->per_class.at(0).map50, 0.7);
    EXPECT_TRUE(names_validation_report("val_metrics.json"));
    EXPECT_TRUE(names_validation_report("artifacts/sub/val_metrics.json"));
    EXPECT_FALSE(names_validation_report("artifacts/old_val_metrics.json"));
}

TEST(RunModel, SeenAndMalformedEventsAreSkipped) {
    RunModel model;
    const int run = model.add_run("r");
    model.apply(run, {numbered(make_metric(0, 1, {{"train/loss", 1.0}}), 0),
                      numbered(make_metric(0, 2, {{"train/loss", 2.0}}), 1)});
    // A reconnect that replays seq 1 adds nothing.
    const RunChanges replay =
        model.apply(run, {numbered(make_metric(0, 2, {{"train/loss", 2.0}}), 1)});
    EXPECT_FALSE(replay.applied);
    EXPECT_EQ(model.series(run).find("train/loss")->size(), 2u);
    Event bad;
    bad.kind = event_kind::kProgress;
    bad.fields = {{"step", "many"}};
    const RunChanges skipped = model.apply(run, {numbered(bad, 5)});
    EXPECT_TRUE(skipped.log.join('\n').contains("event 5 skipped"))
        << skipped.log.join('\n').toStdString();
    EXPECT_EQ(model.progress(run).step, 0);
}

// The sources hand a run over in slices: the result must not depend on where a slice ends, also
// when a rollback and the points it supersedes land in different slices.
TEST(RunModel, AppliedInSlicesEqualsAppliedAtOnce) {
    std::vector<Event> events;
    std::int64_t step = 0;
    for (std::int64_t seq = 0; seq < 5000; ++seq) {
        if (seq % 700 == 699) {
            step -= 50;
            events.push_back(numbered(make_rollback(step), seq));
        } else {
            ++step;
            events.push_back(
                numbered(make_metric(static_cast<int>(step / 100), step,
                                     {{"train/loss", std::sin(static_cast<double>(seq))}}),
                         seq));
        }
    }
    RunModel whole, sliced;
    whole.add_run("r");
    sliced.add_run("r");
    whole.apply(0, events);
    for (std::size_t at = 0; at < events.size(); at += 333)
        sliced.apply(0, std::vector<Event>(events.begin() + static_cast<std::ptrdiff_t>(at),
                                           events.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                                at + 333, events.size()))));
    const Series* a = whole.series(0).find("train/loss");
    const Series* b = sliced.series(0).find("train/loss");
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->step, b->step);
    EXPECT_EQ(a->value, b->value);
    EXPECT_EQ(a->time, b->time);
    EXPECT_EQ(whole.series(0).last_seq(), sliced.series(0).last_seq());
}
