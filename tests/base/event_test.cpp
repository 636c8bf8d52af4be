#include "core/base/event.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/base/error.h"
#include "tests/support/temp_dir.h"

using namespace crucible;

namespace {
std::filesystem::path temp_dir(const std::string& name) {
    return test_support::scratch_dir("event_" + name);
}
}  // namespace

TEST(Event, JsonRoundTripKeepsFields) {
    Event e = make_metric(3, 120, {{"train/box_loss", 1.23}, {"lr/pg0", 0.001}});
    e.seq = 17;
    e.t = 1764489600.12;
    Json j = event_to_json(e);
    EXPECT_EQ(j["seq"], 17);
    EXPECT_EQ(j["kind"], "metric");
    EXPECT_EQ(j["epoch"], 3);
    EXPECT_EQ(j["values"]["train/box_loss"], 1.23);
    Event back = event_from_json(j);
    EXPECT_EQ(back.seq, 17);
    EXPECT_EQ(back.step(), 120);
    EXPECT_EQ(back.fields["values"]["lr/pg0"], 0.001);
}

TEST(Event, RejectsBadFieldsNamingThem) {
    try {
        event_from_json(Json{{"seq", -1}, {"kind", "metric"}}, "events.jsonl:4");
        FAIL();
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("events.jsonl:4"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("seq"), std::string::npos);
    }
    EXPECT_THROW(event_from_json(Json{{"seq", 1}, {"kind", "nonsense"}}), InputError);
    EXPECT_THROW(event_from_json(Json{{"seq", 1}, {"kind", "rollback"}}), InputError);
    EXPECT_THROW(event_from_json(Json::array()), InputError);
}

TEST(Event, WriterAssignsGapFreeSeqAndContinuesAfterReopen) {
    auto dir = temp_dir("writer");
    auto path = dir / "events.jsonl";
    {
        EventLogWriter w(path);
        EXPECT_EQ(w.append(make_log("info", "a")).seq, 0);
        EXPECT_EQ(w.append(make_log("info", "b")).seq, 1);
    }
    {
        // Simulate a crash in the middle of a line.
        std::ofstream out(path, std::ios::app | std::ios::binary);
        out << "{\"seq\":2,\"kind\":\"lo";
    }
    EventLogWriter w2(path);
    EXPECT_EQ(w2.next_seq(), 2);
    EXPECT_EQ(w2.append(make_status("running")).seq, 2);
    auto all = read_event_log(path);
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[2].kind, "status");
    auto after = read_event_log(path, 0);
    ASSERT_EQ(after.size(), 2u);
    EXPECT_EQ(after[0].seq, 1);
    std::filesystem::remove_all(dir);
}

TEST(Event, RollbackDropsSupersededPoints) {
    std::vector<Event> ev;
    for (int s = 1; s <= 5; ++s)
        ev.push_back(make_metric(0, s * 10, {{"loss", s}}));
    ev.push_back(make_rollback(20));
    ev.push_back(make_metric(0, 30, {{"loss", 33}}));
    auto kept = drop_superseded(ev);
    std::vector<std::int64_t> steps;
    for (auto& e : kept)
        if (e.kind == "metric") steps.push_back(e.step());
    EXPECT_EQ(steps, (std::vector<std::int64_t>{10, 20, 30}));
    EXPECT_EQ(kept.back().fields["values"]["loss"], 33);
}

TEST(Event, ReadRejectsDamagedMiddleLine) {
    auto dir = temp_dir("damaged");
    auto path = dir / "events.jsonl";
    std::ofstream(path) << "{\"seq\":0,\"kind\":\"log\"}\nnot json\n{\"seq\":2,\"kind\":\"log\"}\n";
    try {
        read_event_log(path);
        FAIL();
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("events.jsonl:2"), std::string::npos);
    }
    std::filesystem::remove_all(dir);
}
