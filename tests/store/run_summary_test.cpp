// Run summaries for the run table (kept per run, refreshed when events arrive, rollbacks
// excluded) and the option comparisons of the hparams columns and the config diff.
#include <gtest/gtest.h>

#include <cmath>

#include "core/store/project.h"
#include "core/store/run_summary.h"
#include "tests/store/store_test_util.h"

namespace crucible::store {
namespace {

using test::TempDir;

Event at(Event e, std::int64_t seq) {
    e.seq = seq;
    e.t = 100.0 + 2.0 * static_cast<double>(seq);
    return e;
}

std::vector<Event> history() {
    return {at(make_metric(0, 1, {{"train/loss", 3.0}}), 0),
            at(make_metric(0, 2, {{"train/loss", 1.0}}), 1),
            at(make_metric(0, 3, {{"train/loss", 2.0}, {"metrics/mAP50(B)", 0.2}}), 2),
            at(make_metric(1, 4, {{"train/loss", nullptr}, {"metrics/mAP50(B)", 0.5}}), 3),
            at(make_metric(1, 5, {{"metrics/mAP50(B)", 0.4}}), 4)};
}

TEST(RunSummary, LastBestAndSpanOfEveryMetric) {
    TempDir dir;
    auto p = Project::create(dir / "p.crucible");
    const auto run = create_run(*p, {.name = "a", .task = "detect.yolo"});
    append_events(*p, run, history());
    const auto all = summarize_runs(*p);
    ASSERT_EQ(all.size(), 1u);
    const RunSummary& s = all[0];
    EXPECT_EQ(s.info.setup.name, "a");
    EXPECT_DOUBLE_EQ(s.first_t, 100.0);
    EXPECT_DOUBLE_EQ(s.last_t, 108.0);
    EXPECT_DOUBLE_EQ(s.duration_s(), 8.0);
    const MetricSummary& loss = s.metrics.at("train/loss");
    EXPECT_DOUBLE_EQ(loss.last, 2.0);  // the null value is not a last value
    EXPECT_EQ(loss.last_step, 3);
    EXPECT_EQ(loss.points, 3);
    EXPECT_DOUBLE_EQ(best_value("train/loss", loss), 1.0);
    const MetricSummary& map = s.metrics.at("metrics/mAP50(B)");
    EXPECT_DOUBLE_EQ(map.last, 0.4);
    EXPECT_EQ(map.last_epoch, 1);
    EXPECT_DOUBLE_EQ(best_value("metrics/mAP50(B)", map), 0.5);
}

TEST(RunSummary, StoredSummaryIsReusedAndRefreshedByNewEvents) {
    TempDir dir;
    auto p = Project::create(dir / "p.crucible");
    const auto run = create_run(*p, {.name = "a", .task = "detect.yolo"});
    auto events = history();
    append_events(*p, run, {events.begin(), events.begin() + 3});
    EXPECT_DOUBLE_EQ(summarize_runs(*p)[0].metrics.at("metrics/mAP50(B)").max, 0.2);
    EXPECT_EQ(p->db().query_int("SELECT seq FROM run_summaries WHERE run_id = 1"), 2);
    // The stored row is what is read while no event came: a changed row shows through.
    p->db().exec("UPDATE run_summaries SET summary = json_set(summary, '$.last_t', 999)");
    EXPECT_DOUBLE_EQ(summarize_runs(*p)[0].last_t, 999.0);
    append_events(*p, run, {events.begin() + 3, events.end()});
    const auto s = summarize_runs(*p)[0];
    EXPECT_DOUBLE_EQ(s.last_t, 108.0);
    EXPECT_DOUBLE_EQ(s.metrics.at("metrics/mAP50(B)").max, 0.5);
    // A damaged row is computed again rather than shown.
    p->db().exec("UPDATE run_summaries SET summary = '{\"metrics\": {\"x\": 3}}'");
    EXPECT_DOUBLE_EQ(summarize_runs(*p)[0].metrics.at("train/loss").min, 1.0);
}

TEST(RunSummary, RolledBackPointsAreNotBest) {
    TempDir dir;
    auto p = Project::create(dir / "p.crucible");
    const auto run = create_run(*p, {.name = "a", .task = "detect.yolo"});
    append_events(*p, run,
                  {at(make_metric(0, 1, {{"train/loss", 2.0}}), 0),
                   at(make_metric(0, 2, {{"train/loss", 0.1}}), 1), at(make_rollback(1), 2),
                   at(make_metric(0, 2, {{"train/loss", 1.5}}), 3)});
    const auto s = summarize_runs(*p)[0];
    EXPECT_DOUBLE_EQ(s.metrics.at("train/loss").min, 1.5);
    EXPECT_EQ(s.metrics.at("train/loss").points, 2);
}

TEST(RunSummary, ReadOnlyProjectSummarizesWithoutWriting) {
    TempDir dir;
    {
        auto p = Project::create(dir / "p.crucible");
        append_events(*p, create_run(*p, {.name = "a", .task = "detect.yolo"}), history());
    }
    auto reader = Project::open_for_reading(dir / "p.crucible");
    EXPECT_DOUBLE_EQ(summarize_runs(*reader)[0].metrics.at("train/loss").last, 2.0);
    EXPECT_EQ(reader->db().query_int("SELECT count(*) FROM run_summaries"), 0);
}

TEST(RunSummary, DeletedRunTakesItsSummary) {
    TempDir dir;
    auto p = Project::create(dir / "p.crucible");
    const auto run = create_run(*p, {.name = "a", .task = "detect.yolo"});
    append_events(*p, run, history());
    summarize_runs(*p);
    delete_run(*p, run);
    EXPECT_TRUE(summarize_runs(*p).empty());
    EXPECT_EQ(p->db().query_int("SELECT count(*) FROM run_summaries"), 0);
}

TEST(RunOptions, FlattenedDiffAndVaryingKeys) {
    const Json a = {{"epochs", 10}, {"lr0", 0.01}, {"augment", {{"mosaic", 1.0}, {"flip", 0.5}}}};
    const Json b = {
        {"epochs", 10}, {"lr0", 0.02}, {"augment", {{"mosaic", 0.0}, {"flip", 0.5}}}, {"seed", 3}};
    const auto flat = flatten_options(a);
    EXPECT_EQ(flat.at("augment.mosaic"), 1.0);
    EXPECT_EQ(flat.size(), 4u);
    const auto diff = differing_options(a, b);
    ASSERT_EQ(diff.size(), 3u);
    EXPECT_EQ(diff[0].key, "augment.mosaic");
    EXPECT_EQ(diff[1].key, "lr0");
    EXPECT_EQ(diff[1].b, 0.02);
    EXPECT_EQ(diff[2].key, "seed");
    EXPECT_TRUE(diff[2].a.is_null());
    EXPECT_TRUE(differing_options(a, a).empty());
    EXPECT_EQ(varying_options({a, b}), (std::vector<std::string>{"augment.mosaic", "lr0", "seed"}));
    EXPECT_TRUE(varying_options({a}).empty());
}

TEST(RunOptions, LossesAreBetterLow) {
    EXPECT_TRUE(lower_is_better("val/box_loss"));
    EXPECT_FALSE(lower_is_better("metrics/mAP50-95(B)"));
}

}  // namespace
}  // namespace crucible::store
