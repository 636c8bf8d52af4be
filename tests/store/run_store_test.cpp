// Runs, idempotent event storage, plot series with rollbacks, legacy servers and presets.
#include <gtest/gtest.h>

#include <cmath>

#include "core/base/error.h"
#include "core/store/dataset_store.h"
#include "core/store/packed_values.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "tests/store/store_test_util.h"

namespace crucible::store {
namespace {

using test::TempDir;

Event metric(std::int64_t seq, std::int64_t step, double loss) {
    Event e = make_metric(static_cast<int>(step / 10), step,
                          Json{{"train/box_loss", loss}, {"lr/pg0", 0.01}});
    e.seq = seq;
    e.t = 1000.0 + static_cast<double>(seq);
    return e;
}

struct RunFixture : ::testing::Test {
    TempDir dir;
    std::unique_ptr<Project> p = Project::create(dir / "p.crucible");
    std::int64_t run = create_run(*p, {.name = "r1", .task = "detect.yolo"});
};

TEST_F(RunFixture, SameSeqTwiceIsStoredOnce) {
    std::vector<Event> a, b;
    for (int i = 0; i < 10; ++i)
        a.push_back(metric(i, i + 1, 1.0 / (i + 1)));
    for (int i = 5; i < 15; ++i)
        b.push_back(metric(i, i + 1, 1.0 / (i + 1)));
    EXPECT_EQ(append_events(*p, run, a), 10u);
    EXPECT_EQ(append_events(*p, run, b), 5u);
    EXPECT_EQ(append_events(*p, run, b), 0u);
    EXPECT_EQ(last_event_seq(*p, run), 14);
    auto events = read_events(*p, run);
    ASSERT_EQ(events.size(), 15u);
    for (int i = 0; i < 15; ++i)
        EXPECT_EQ(events[static_cast<std::size_t>(i)].seq, i);
    EXPECT_EQ(event_to_json(events[3]), event_to_json(a[3]));  // as received
    EXPECT_EQ(read_events(*p, run, 12).size(), 2u);
    auto series = read_series(*p, run);
    ASSERT_EQ(series.count("train/box_loss"), 1u);
    const Series& loss = series["train/box_loss"];
    ASSERT_EQ(loss.size(), 15u);
    EXPECT_EQ(loss.step[14], 15);
    EXPECT_EQ(loss.epoch[14], 1);
    EXPECT_DOUBLE_EQ(loss.value[4], 0.2);
    EXPECT_DOUBLE_EQ(loss.t[4], 1004.0);
    EXPECT_EQ(series["lr/pg0"].size(), 15u);
    auto info = get_run(*p, run);
    EXPECT_EQ(info.events, 15);
    EXPECT_EQ(info.last_seq, 14);
}

TEST_F(RunFixture, SeriesDropSupersededPointsLikeDropSuperseded) {
    std::vector<Event> events;
    std::int64_t seq = 0;
    for (int s = 1; s <= 10; ++s)
        events.push_back(metric(seq++, s, s));
    Event rb = make_rollback(5);
    rb.seq = seq++;
    rb.t = 2000;
    events.push_back(rb);
    for (int s = 6; s <= 8; ++s)
        events.push_back(metric(seq++, s, 100 + s));
    Event rb2 = make_rollback(7);
    rb2.seq = seq++;
    rb2.t = 3000;
    events.push_back(rb2);
    for (int s = 8; s <= 9; ++s)
        events.push_back(metric(seq++, s, 200 + s));
    Event ev = make_eval(0, 9, Json{{"metrics/mAP50(B)", 0.5}});
    ev.seq = seq++;
    events.push_back(ev);
    append_events(*p, run, events);

    auto series = read_series(*p, run);
    const Series& loss = series["train/box_loss"];
    std::vector<std::int64_t> expected_steps;
    std::vector<double> expected_values;
    for (const Event& e : drop_superseded(read_events(*p, run))) {
        if (e.kind != event_kind::kMetric) continue;
        expected_steps.push_back(e.step());
        expected_values.push_back(e.fields["values"]["train/box_loss"].get<double>());
    }
    EXPECT_EQ(loss.step, expected_steps);
    EXPECT_EQ(loss.value, expected_values);
    EXPECT_EQ(loss.step, (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
    EXPECT_DOUBLE_EQ(loss.value[5], 106);  // step 6 from after the first rollback
    EXPECT_DOUBLE_EQ(loss.value[7], 208);  // step 8 from after the second
    ASSERT_EQ(series["metrics/mAP50(B)"].size(), 1u);
    EXPECT_EQ(read_events(*p, run).size(), events.size());  // rollbacks are stored like any event
}

TEST_F(RunFixture, NanValuesAndEventsWithoutStep) {
    Event e = make_metric(0, 1, Json{{"train/loss", nullptr}});
    e.seq = 0;
    Event s = make_status("running");
    s.seq = 1;
    Event m;
    m.kind = event_kind::kMetric;
    m.seq = 2;
    m.fields = Json{{"values", {{"train/loss", 0.5}, {"text", "not a number"}}}};
    append_events(*p, run, {e, s, m});
    auto series = read_series(*p, run);
    ASSERT_EQ(series.size(), 1u);
    const Series& loss = series["train/loss"];
    ASSERT_EQ(loss.size(), 2u);
    EXPECT_TRUE(std::isnan(loss.value[0]));
    EXPECT_EQ(loss.step[1], -1);
    EXPECT_DOUBLE_EQ(loss.value[1], 0.5);
}

TEST_F(RunFixture, DamagedPackedValuesAreSkippedNotTrusted) {
    append_events(*p, run, {metric(0, 0, 2.0)});
    // A hand-edited or damaged file: a blob cut inside a record, and a name id that is unknown.
    std::string blob;
    append_packed_value(blob, 1, 3.0);
    append_packed_value(blob, 999, 4.0);
    blob.append("\x01\x02\x03", 3);
    p->db()
        .prepare(
            "INSERT INTO run_points(run_id, seq, step, epoch, t, vals) VALUES(?, 1, 1, 0, 1, ?)")
        .bind(1, run)
        .bind_blob(2, blob)
        .run();
    auto series = read_series(*p, run);
    ASSERT_EQ(series.size(), 2u);
    const std::string first =
        p->db().query_text("SELECT name FROM metric_names WHERE id = 1").value();
    ASSERT_EQ(series[first].size(), 2u);
    EXPECT_EQ(series[first].value[1], 3.0);
}

TEST_F(RunFixture, RejectsUnknownRunsAndUnnumberedEvents) {
    EXPECT_THROW(append_events(*p, run + 100, {metric(0, 1, 1)}), InputError);
    Event e = make_status("running");  // seq -1
    EXPECT_THROW(append_events(*p, run, {e}), InputError);
    EXPECT_EQ(read_events(*p, run).size(), 0u);
}

TEST_F(RunFixture, RunSetupRecordsDatasetVersionAndState) {
    auto ds = test::make_dataset(dir / "data", 3, 32);
    auto imported = import_dataset(*p, ds, {.name = "d"});
    RunSetup setup{.name = "yolo-n",
                   .task = "detect.yolo",
                   .options = Json{{"epochs", 3}, {"imgsz", 320}},
                   .dataset_id = imported.dataset_id,
                   .server = "gpu1",
                   .peers = {"gpu2", "\xe8\xae\xad\xe7\xbb\x83-c"}};
    auto id = create_run(*p, setup);
    update_run_state(*p, id, "running", std::string("job-42"));
    auto r = get_run(*p, id);
    EXPECT_EQ(r.setup.dataset_hash, imported.version_hash);
    EXPECT_EQ(r.setup.options["imgsz"], 320);
    EXPECT_EQ(r.setup.state, "running");
    EXPECT_EQ(r.setup.remote_job_id, "job-42");
    EXPECT_EQ(r.setup.server, "gpu1");
    EXPECT_EQ(r.setup.peers, (std::vector<std::string>{"gpu2", "\xe8\xae\xad\xe7\xbb\x83-c"}));
    EXPECT_TRUE(get_run(*p, run).setup.peers.empty());
    update_run_state(*p, id, "succeeded");
    EXPECT_EQ(get_run(*p, id).setup.remote_job_id, "job-42");
    EXPECT_EQ(list_runs(*p).size(), 2u);
    // Deleting the dataset keeps the run and its recorded version.
    delete_dataset(*p, imported.dataset_id);
    r = get_run(*p, id);
    EXPECT_FALSE(r.setup.dataset_id.has_value());
    EXPECT_EQ(r.setup.dataset_hash, imported.version_hash);
}

// A run's state follows its newest status event, as the agent's stream or the worker's file
// delivers it; an older status replayed later, or one with an unknown state, changes nothing.
// A project file is outside input: a peers column edited by hand into something else is refused
// naming the run, and SQLite itself refuses text that is not JSON.
TEST_F(RunFixture, PeersEditedByHandAreRefusedNamingTheRun) {
    for (const char* bad : {R"({"b": 1})", "[1]", R"([""])", R"(["b", null])", "\"b\""}) {
        p->db()
            .prepare("UPDATE runs SET peers = ? WHERE id = ?")
            .bind_all(std::string(bad), run)
            .run();
        try {
            get_run(*p, run);
            ADD_FAILURE() << bad << " was read";
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find("run " + std::to_string(run) + ": peers"),
                      std::string::npos)
                << bad << ": " << e.what();
        }
    }
    EXPECT_THROW(p->db()
                     .prepare("UPDATE runs SET peers = ? WHERE id = ?")
                     .bind_all(std::string("[not json"), run)
                     .run(),
                 std::exception);
}

TEST_F(RunFixture, StateFollowsTheNewestStatusEvent) {
    auto status = [](std::int64_t seq, const std::string& state) {
        Event e = make_status(state);
        e.seq = seq;
        return e;
    };
    EXPECT_EQ(get_run(*p, run).setup.state, "draft");
    append_events(*p, run, {status(0, "running"), metric(1, 1, 0.5)});
    EXPECT_EQ(get_run(*p, run).setup.state, "running");
    append_events(*p, run, {status(5, "paused"), status(3, "running")});  // newest by seq wins
    EXPECT_EQ(get_run(*p, run).setup.state, "paused");
    append_events(*p, run, {status(4, "failed")});  // older than what is stored
    EXPECT_EQ(get_run(*p, run).setup.state, "paused");
    Event odd = status(9, "exploded");
    append_events(*p, run, {odd});
    EXPECT_EQ(get_run(*p, run).setup.state, "paused");
    append_events(*p, run, {status(10, "succeeded")});
    EXPECT_EQ(list_runs(*p).front().setup.state, "succeeded");
}

TEST_F(RunFixture, DeletingARunTakesItsEventsAndPointsOnly) {
    const auto other = create_run(*p, {.name = "r2", .task = "detect.yolo"});
    append_events(*p, run, {metric(0, 1, 0.5), metric(1, 2, 0.4)});
    append_events(*p, other, {metric(0, 1, 0.9)});
    delete_run(*p, run);
    EXPECT_THROW(get_run(*p, run), InputError);
    EXPECT_THROW(delete_run(*p, run), InputError);
    auto count = [&](const char* table) {
        auto s = p->db().prepare(std::string("SELECT count(*) FROM ") + table);
        s.step();
        return s.column_int64(0);
    };
    EXPECT_EQ(count("run_events"), 1);  // the other run's
    EXPECT_EQ(count("run_points"), 1);
    EXPECT_EQ(read_series(*p, other)["train/box_loss"].size(), 1u);
    ASSERT_EQ(list_runs(*p).size(), 1u);
    EXPECT_EQ(list_runs(*p)[0].id, other);
}

TEST_F(RunFixture, LegacyServersAreReadRenamedAndForgotten) {
    // Projects of schema version 3 kept their servers themselves; the studio moves them into
    // the user's registry once (ui/server_access.h) through these calls.
    p->db().exec(
        "INSERT INTO servers(name, url, tls_fingerprint) VALUES('s', 'https://host:7443/', ''),"
        "('t', 'http://127.0.0.1:7443', '')");
    auto legacy_run = create_run(*p, {.name = "r", .task = "detect.yolo", .server = "s"});
    auto servers = legacy_servers(*p);
    ASSERT_EQ(servers.size(), 2u);
    EXPECT_EQ(servers[0].name, "s");
    EXPECT_EQ(servers[0].url, "https://host:7443/");
    rename_run_server(*p, "s", "s-2");
    EXPECT_EQ(get_run(*p, legacy_run).setup.server, "s-2");
    forget_legacy_server(*p, "s");
    ASSERT_EQ(legacy_servers(*p).size(), 1u);
    EXPECT_EQ(legacy_servers(*p)[0].name, "t");
}

TEST_F(RunFixture, PresetsUpsert) {
    save_preset(*p, "detect.yolo", "fast", Json{{"epochs", 1}});
    save_preset(*p, "detect.yolo", "fast", Json{{"epochs", 2}});
    save_preset(*p, "llm.lora", "fast", Json{{"rank", 8}});
    auto presets = list_presets(*p, "detect.yolo");
    ASSERT_EQ(presets.size(), 1u);
    EXPECT_EQ(presets["fast"]["epochs"], 2);
}

}  // namespace
}  // namespace crucible::store

namespace crucible::store {
namespace {

// A long history goes in slices of at most the given rows, events and points alike; the record
// stays until delete_run.
TEST(RunDeletion, HistoryGoesInSlices) {
    test::TempDir dir;
    auto p = Project::create(dir / "p.crucible");
    const auto run = create_run(*p, {.name = "long", .task = "detect.yolo"});
    std::vector<Event> events;
    for (int i = 0; i < 2500; ++i) {
        Event e = make_metric(0, i + 1, {{"train/loss", 1.0}});
        e.seq = i;
        e.t = i;
        events.push_back(e);
    }
    append_events(*p, run, events);  // 2,500 events and 2,500 points
    std::vector<std::int64_t> slices;
    for (std::int64_t n; (n = delete_run_history_slice(*p, run, 1000)) > 0;)
        slices.push_back(n);
    EXPECT_EQ(slices, (std::vector<std::int64_t>{1000, 1000, 1000, 1000, 1000}));
    EXPECT_EQ(p->db().query_int("SELECT count(*) FROM run_events"), 0);
    EXPECT_EQ(p->db().query_int("SELECT count(*) FROM run_points"), 0);
    EXPECT_EQ(get_run(*p, run).setup.name, "long");
    delete_run(*p, run);
    EXPECT_THROW(get_run(*p, run), InputError);
}

}  // namespace
}  // namespace crucible::store
