// GPU alarms: the monitor's episodes and thresholds, the job inbox (one writer of events.jsonl at
// a time), and the whole path on a real agent with the fake NVML and the fake worker.
#include <httplib.h>

#include <cstdlib>
#include <fstream>
#include <set>

#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/jobs/alarms.h"
#include "core/jobs/job_events.h"
#include "tests/agent/agent_test_util.h"

using namespace crucible;
using namespace crucible::test;

namespace {

jobs::GpuReport one_gpu(int utilization, int temperature, double vram_percent) {
    jobs::GpuReport r;
    r.nvml = true;
    jobs::GpuInfo g;
    g.index = 0;
    g.name = "GPU";
    g.utilization = utilization;
    g.temperature = temperature;
    g.memory_total = 1000;
    g.memory_used = static_cast<std::uint64_t>(vram_percent * 10);
    r.gpus.push_back(g);
    return r;
}

std::vector<std::string> names(const std::vector<jobs::RaisedAlarm>& alarms) {
    std::vector<std::string> out;
    for (const auto& a : alarms)
        out.push_back(a.event.fields.value("alarm", std::string()));
    return out;
}

const std::map<std::string, std::vector<int>> kJobOnGpu0{{"j1", {0}}};

}  // namespace

TEST(AlarmMonitor, TemperatureIsRaisedOncePerEpisodeWithAMargin) {
    jobs::AlarmThresholds t;
    t.temperature_c = 87;
    t.gpu_idle_percent = 0;  // off
    jobs::AlarmMonitor m(t);
    EXPECT_TRUE(m.check(one_gpu(90, 80, 10), kJobOnGpu0, 0).empty());
    auto raised = m.check(one_gpu(90, 90, 10), kJobOnGpu0, 1);
    ASSERT_EQ(names(raised), std::vector<std::string>{"gpu_temperature"});
    EXPECT_EQ(raised[0].job_id, "j1");
    EXPECT_EQ(raised[0].event.kind, "alarm");
    EXPECT_EQ(raised[0].event.fields["gpu"], 0);
    EXPECT_EQ(raised[0].event.fields["value"], 90.0);
    EXPECT_EQ(raised[0].event.fields["limit"], 87.0);
    EXPECT_NE(raised[0].event.fields.value("message", std::string()).find("90 C"),
              std::string::npos);
    EXPECT_TRUE(m.check(one_gpu(90, 91, 10), kJobOnGpu0, 2).empty());  // still the same episode
    EXPECT_TRUE(m.check(one_gpu(90, 85, 10), kJobOnGpu0, 3).empty());  // inside the margin
    EXPECT_TRUE(m.check(one_gpu(90, 88, 10), kJobOnGpu0, 4).empty());  // not re-armed yet
    EXPECT_TRUE(m.check(one_gpu(90, 80, 10), kJobOnGpu0, 5).empty());  // cleared
    EXPECT_EQ(names(m.check(one_gpu(90, 88, 10), kJobOnGpu0, 6)),
              std::vector<std::string>{"gpu_temperature"});
}

TEST(AlarmMonitor, IdleGpuNeedsToStayIdleForTheWholeWindow) {
    jobs::AlarmThresholds t;
    t.gpu_idle_percent = 5;
    t.gpu_idle_seconds = 300;
    jobs::AlarmMonitor m(t);
    EXPECT_TRUE(m.check(one_gpu(0, 50, 10), kJobOnGpu0, 1000).empty());
    EXPECT_TRUE(m.check(one_gpu(3, 50, 10), kJobOnGpu0, 1299).empty());
    EXPECT_EQ(names(m.check(one_gpu(0, 50, 10), kJobOnGpu0, 1300)),
              std::vector<std::string>{"gpu_idle"});
    EXPECT_TRUE(m.check(one_gpu(0, 50, 10), kJobOnGpu0, 1400).empty());
    // Busy for one look: the idle stretch starts again.
    EXPECT_TRUE(m.check(one_gpu(60, 50, 10), kJobOnGpu0, 1500).empty());
    EXPECT_TRUE(m.check(one_gpu(0, 50, 10), kJobOnGpu0, 1501).empty());
    EXPECT_TRUE(m.check(one_gpu(0, 50, 10), kJobOnGpu0, 1800).empty());
    EXPECT_EQ(names(m.check(one_gpu(0, 50, 10), kJobOnGpu0, 1801)),
              std::vector<std::string>{"gpu_idle"});
}

TEST(AlarmMonitor, VramOnlyForGpusOfRunningJobsAndSwitchesOff) {
    jobs::AlarmThresholds t;
    t.vram_percent = 95;
    t.gpu_idle_percent = 0;
    jobs::AlarmMonitor m(t);
    EXPECT_TRUE(m.check(one_gpu(90, 50, 99), {}, 0).empty());             // no job
    EXPECT_TRUE(m.check(one_gpu(90, 50, 99), {{"j2", {1}}}, 0).empty());  // other GPU
    EXPECT_EQ(names(m.check(one_gpu(90, 50, 99), kJobOnGpu0, 1)),         //
              std::vector<std::string>{"gpu_memory"});                    //
    EXPECT_TRUE(m.check(one_gpu(90, 50, 99), {}, 2).empty());             // job ended
    EXPECT_EQ(names(m.check(one_gpu(90, 50, 99), kJobOnGpu0, 3)),         // resumed job:
              std::vector<std::string>{"gpu_memory"});                    // afresh
    jobs::AlarmThresholds off;
    off.vram_percent = off.temperature_c = off.gpu_idle_percent = 0;
    jobs::AlarmMonitor quiet(off);
    EXPECT_TRUE(quiet.check(one_gpu(0, 150, 100), kJobOnGpu0, 1e6).empty());
}

TEST(AlarmThresholds, ReadFromAgentJsonAndHostileValuesNamed) {
    auto t = jobs::AlarmThresholds::from_json(
        Json{{"gpu_idle_seconds", 60}, {"temperature_c", 80}, {"vram_percent", 90}}, "agent.json");
    EXPECT_EQ(t.gpu_idle_seconds, 60);
    EXPECT_EQ(t.temperature_c, 80);
    EXPECT_EQ(t.vram_percent, 90);
    EXPECT_EQ(t.gpu_idle_percent, jobs::AlarmThresholds{}.gpu_idle_percent);
    struct Case {
        Json json;
        const char* expect;
    };
    for (const auto& c : std::vector<Case>{{Json::array(), "expected an object"},
                                           {{{"temperature_c", "hot"}}, "temperature_c"},
                                           {{{"vram_percent", 101}}, "vram_percent"},
                                           {{{"gpu_idle_seconds", -1}}, "gpu_idle_seconds"},
                                           {{{"temprature_c", 80}}, "temprature_c"}}) {
        try {
            jobs::AlarmThresholds::from_json(c.json, "agent.json");
            ADD_FAILURE() << c.json.dump() << " accepted";
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("agent.json"), std::string::npos) << e.what();
        }
    }
}

// The VRAM alarm shows NVML's figure (reserved memory plus the CUDA context) beside what the
// worker's caching allocator last reported, read from the end of the job's events.
TEST(AllocatorNote, TheLastMemoryReportOfTheWorker) {
    const auto dir = fresh_dir("allocator_note");
    EXPECT_EQ(jobs::allocator_note(dir), "");  // no events yet
    {
        std::ofstream events(dir / "events.jsonl");
        events << R"({"seq":0,"t":1,"kind":"status","state":"running"})"
               << "\n"
               << R"({"seq":1,"t":2,"kind":"metric","epoch":1,"step":10,"values":)"
               << R"({"gpu/mem_allocated_gib":10.25,"gpu/mem_reserved_gib":12.0}})"
               << "\n"
               << R"({"seq":2,"t":3,"kind":"metric","epoch":1,"step":20,"values":)"
               << R"({"gpu/mem_allocated_gib":20.14,"gpu/mem_reserved_gib":22.43}})"
               << "\n"
               << R"({"seq":3,"t":4,"kind":"metric","epoch":1,"step":20,"values":{"x":1}})"
               << "\n"
               << "{not json\n";
    }
    EXPECT_EQ(jobs::allocator_note(dir),
              " (the job's allocator: allocated 20.1 GiB, reserved 22.4 GiB)");
    std::filesystem::remove_all(dir);
}

TEST(JobInbox, PostedEventsAreAppendedInOrderByTheOwnerOfTheLog) {
    auto dir = fresh_dir("inbox");
    {
        EventLogWriter w(dir / "events.jsonl");
        w.append(make_status("running"));
        w.append(make_log("info", "x"));
    }
    post_to_job_inbox(dir, make_alarm("gpu_idle", "first"));
    post_to_job_inbox(dir, make_alarm("gpu_memory", "second"));
    std::ofstream(job_inbox(dir) / "00000000000000000000-junk.json") << "{not json";
    // Nothing reaches events.jsonl until its owner drains the inbox.
    EXPECT_EQ(read_event_log(dir / "events.jsonl").size(), 2u);
    Event last = jobs::append_job_event(dir, make_status("failed", "gone"));
    auto events = read_event_log(dir / "events.jsonl");
    ASSERT_EQ(events.size(), 5u);
    for (std::size_t i = 0; i < events.size(); ++i)
        EXPECT_EQ(events[i].seq, static_cast<std::int64_t>(i));
    EXPECT_EQ(events[2].fields["message"], "first");
    EXPECT_EQ(events[3].fields["message"], "second");
    EXPECT_GT(events[2].t, 0);
    EXPECT_EQ(last.seq, 4);
    EXPECT_EQ(events[4].kind, "status");
    // Drained files are gone; the unreadable one is set aside, not lost and not retried.
    std::vector<std::string> left;
    for (const auto& e : std::filesystem::directory_iterator(job_inbox(dir)))
        left.push_back(e.path().filename().string());
    EXPECT_EQ(left, std::vector<std::string>{"00000000000000000000-junk.json.bad"});
    EventLogWriter again(dir / "events.jsonl");
    EXPECT_EQ(drain_job_inbox(dir, again), 0u);
    std::filesystem::remove_all(dir);
}

namespace {

// The fake NVML reads these on every call (see fake_nvml.cpp).
struct FakeGpuEnv {
    FakeGpuEnv() {
        crucible::set_environment_variable("FAKE_NVML_UTIL_0", "0");
        crucible::set_environment_variable("FAKE_NVML_TEMP_0", "95");
        crucible::set_environment_variable("FAKE_NVML_MEM_USED_MB_0", "80000");  // of 81920
    }
    ~FakeGpuEnv() {
        for (const char* v : {"FAKE_NVML_UTIL_0", "FAKE_NVML_TEMP_0", "FAKE_NVML_MEM_USED_MB_0"})
            crucible::unset_environment_variable(v);
    }
};

}  // namespace

TEST(AgentAlarms, GpuAlarmsReachTheRunningJobsEventsThroughItsWorker) {
    FakeGpuEnv env;
    auto data = fresh_dir("alarms");
    auto config = fake_agent_config(data);
    config.nvml_library = CRUCIBLE_FAKE_NVML;
    config.alarms.gpu_idle_seconds = 0.3;
    config.alarms.temperature_c = 85;
    config.alarms.vram_percent = 95;
    config.telemetry_period = std::chrono::milliseconds(100);
    jobs::AgentService agent(config);
    std::string token = agent.tokens().create("t");
    int port = agent.start();
    net::ApiClient c({"http://127.0.0.1:" + std::to_string(port), token, ""});
    Json job = c.post(
        "/v1/jobs",
        {{"task", "test.fake"}, {"gpus", 1}, {"options", {{"steps", 400}, {"delay_ms", 20}}}});
    const std::string id = job["id"];
    auto events_file = data / "jobs" / id / "events.jsonl";
    auto alarms_in_log = [&] {
        std::set<std::string> kinds;
        for (const auto& e : read_event_log(events_file))
            if (e.kind == "alarm") kinds.insert(e.fields.value("alarm", std::string()));
        return kinds;
    };
    const std::set<std::string> expected{"gpu_idle", "gpu_temperature", "gpu_memory"};
    ASSERT_TRUE(wait_until([&] { return alarms_in_log() == expected; }))
        << "alarms seen: " << alarms_in_log().size();
    // They arrived while the job ran: its worker appended them (the live path).
    EXPECT_EQ(c.get("/v1/jobs/" + id)["state"], "running");
    EXPECT_EQ(c.get("/v1/jobs/" + id)["gpu_ids"], Json::array({0}));
    // Clients of the server-wide stream saw them live, naming the job.
    {
        httplib::Client raw("127.0.0.1", port);
        raw.set_read_timeout(10, 0);
        std::string seen;
        raw.Get("/v1/stream", {{"Authorization", "Bearer " + token}, {"Last-Event-ID", "0"}},
                [&](const char* bytes, size_t n) {
                    seen.append(bytes, n);
                    return seen.find("\"gpu_memory\"") == std::string::npos ||
                           seen.find("event: alarm") == std::string::npos;
                });
        EXPECT_NE(seen.find("event: alarm"), std::string::npos);
        EXPECT_NE(seen.find("\"job\":\"" + id + "\""), std::string::npos);
    }
    c.post("/v1/jobs/" + id + "/cancel", Json::object());
    ASSERT_TRUE(wait_until([&] { return c.get("/v1/jobs/" + id)["state"] == "canceled"; }));
    agent.stop();
    // One writer at a time: seq is gap-free and unique; each alarm once (one episode each).
    auto events = read_event_log(events_file);
    int alarms = 0;
    for (std::size_t i = 0; i < events.size(); ++i) {
        EXPECT_EQ(events[i].seq, static_cast<std::int64_t>(i));
        if (events[i].kind != "alarm") continue;
        ++alarms;
        EXPECT_EQ(events[i].fields["gpu"], 0);
        EXPECT_EQ(events[i].fields["gpu_name"], "NVIDIA Fake A100");
    }
    EXPECT_EQ(alarms, 3);
    EXPECT_EQ(events.back().kind, "status");
    EXPECT_EQ(events.back().fields["state"], "canceled");
    std::filesystem::remove_all(data);
}
