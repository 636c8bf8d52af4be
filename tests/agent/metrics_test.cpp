// GET /metrics on a real agent: the Prometheus text parses (every sample under a declared
// family, labels well formed), GPUs from the fake NVML, a running job's state, step and latest
// loss; a user's token sees only that user's jobs, a viewer's sees all, no token nothing. And the
// job snapshot behind it, read from a hand-written events.jsonl.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "core/base/environment.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/prometheus_text.h"
#include "core/jobs/job_snapshot.h"
#include "tests/agent/agent_test_util.h"

using namespace crucible;
using namespace crucible::test;

namespace {

struct Sample {
    std::string name;
    std::map<std::string, std::string> labels;
    double value = 0;
};

// A strict reader of the text format for the test: every sample's name must have had a # TYPE
// line; label values are unescaped. A malformed line fails the test naming it.
std::vector<Sample> parse_prometheus(const std::string& text) {
    std::vector<Sample> out;
    std::map<std::string, std::string> types;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("# HELP ", 0) == 0) continue;
        if (line.rfind("# TYPE ", 0) == 0) {
            std::istringstream t(line.substr(7));
            std::string name, type;
            t >> name >> type;
            EXPECT_TRUE(type == "gauge" || type == "counter") << line;
            EXPECT_EQ(types.count(name), 0u) << "family declared twice: " << line;
            types[name] = type;
            continue;
        }
        Sample s;
        std::size_t i = line.find_first_of("{ ");
        s.name = line.substr(0, i);
        EXPECT_EQ(types.count(s.name), 1u) << "no # TYPE before: " << line;
        if (i < line.size() && line[i] == '{') {
            ++i;
            while (i < line.size() && line[i] != '}') {
                const std::size_t eq = line.find("=\"", i);
                if (eq == std::string::npos) {
                    ADD_FAILURE() << "bad labels: " << line;
                    return out;
                }
                const std::string key = line.substr(i, eq - i);
                std::string value;
                std::size_t k = eq + 2;
                for (; k < line.size() && line[k] != '"'; ++k) {
                    if (line[k] == '\\' && k + 1 < line.size()) {
                        ++k;
                        value += line[k] == 'n' ? '\n' : line[k];
                    } else {
                        value += line[k];
                    }
                }
                s.labels[key] = value;
                i = k + 1;
                if (i < line.size() && line[i] == ',') ++i;
            }
            ++i;
        }
        s.value = std::stod(line.substr(i + 1));
        out.push_back(std::move(s));
    }
    return out;
}

std::vector<Sample> named(const std::vector<Sample>& all, const std::string& name) {
    std::vector<Sample> out;
    for (const auto& s : all)
        if (s.name == name) out.push_back(s);
    return out;
}

struct MetricsFixture : ::testing::Test {
    std::filesystem::path data;
    std::unique_ptr<jobs::AgentService> agent;
    std::string alice, bob, viewer;
    int port = 0;

    void SetUp() override {
        set_environment_variable("FAKE_NVML_UTIL_0", "87");
        set_environment_variable("FAKE_NVML_TEMP_0", "71");
        data = fresh_dir("metrics");
        auto config = fake_agent_config(data / "agent");
        config.nvml_library = CRUCIBLE_FAKE_NVML;
        agent = std::make_unique<jobs::AgentService>(config);
        alice = agent->tokens().create("alice");
        bob = agent->tokens().create("bob");
        viewer = agent->tokens().create("grafana", {net::TokenRole::Viewer, 0});
        port = agent->start();
    }
    void TearDown() override {
        agent->stop();
        agent.reset();
        unset_environment_variable("FAKE_NVML_UTIL_0");
        unset_environment_variable("FAKE_NVML_TEMP_0");
    }
    // The body and status of GET /metrics with `token` ("" sends none).
    std::pair<int, std::string> scrape(const std::string& token) const {
        httplib::Client cli("127.0.0.1", port);
        httplib::Headers headers;
        if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
        const auto r = cli.Get("/metrics", headers);
        if (!r) return {-1, ""};
        if (r->status == 200) {
            EXPECT_EQ(r->get_header_value("Content-Type"), PrometheusText::kContentType);
        }
        return {r->status, r->body};
    }
};

}  // namespace

TEST_F(MetricsFixture, GpusAndARunningJobAreScrapedAndUsersSeeOnlyTheirOwnJobs) {
    net::ApiClient as_alice({"http://127.0.0.1:" + std::to_string(port), alice, ""});
    const std::string id =
        as_alice.post("/v1/jobs", {{"task", "test.fake"},
                                   {"name", "line \"3\" station"},
                                   {"options", {{"steps", 400}, {"delay_ms", 20}}}})["id"];
    // Running, with a few of its metric events written.
    ASSERT_TRUE(wait_until([&] {
        const auto samples = parse_prometheus(scrape(viewer).second);
        for (const auto& s : named(samples, "crucible_job_step"))
            if (s.labels.at("job") == id && s.value >= 3) return true;
        return false;
    }));

    const auto [status, text] = scrape(viewer);
    ASSERT_EQ(status, 200);
    const auto samples = parse_prometheus(text);
    ASSERT_FALSE(named(samples, "crucible_agent_info").empty());

    const auto util = named(samples, "crucible_gpu_utilization_ratio");
    ASSERT_FALSE(util.empty()) << text;
    EXPECT_EQ(util[0].labels.at("gpu"), "0");
    EXPECT_DOUBLE_EQ(util[0].value, 0.87);
    EXPECT_DOUBLE_EQ(named(samples, "crucible_gpu_temperature_celsius").at(0).value, 71);
    EXPECT_GT(named(samples, "crucible_gpu_memory_total_bytes").at(0).value, 0);

    bool running = false;
    for (const auto& s : named(samples, "crucible_job_state"))
        if (s.labels.at("job") == id) {
            running = s.labels.at("state") == "running";
            EXPECT_EQ(s.labels.at("name"), "line \"3\" station") << "escaped and read back";
            EXPECT_EQ(s.labels.at("task"), "test.fake");
        }
    EXPECT_TRUE(running) << text;
    bool loss = false;
    for (const auto& s : named(samples, "crucible_job_train_value"))
        loss |= s.labels.at("job") == id && s.labels.at("metric") == "train/loss" && s.value > 0;
    EXPECT_TRUE(loss) << text;
    for (const auto& s : named(samples, "crucible_jobs"))
        if (s.labels.at("state") == "running") {
            EXPECT_EQ(s.value, 1);
        }

    // Alice sees her job, Bob none of it, and no token reads nothing.
    EXPECT_NE(scrape(alice).second.find(id), std::string::npos);
    const auto [bob_status, bob_text] = scrape(bob);
    EXPECT_EQ(bob_status, 200);
    EXPECT_EQ(bob_text.find(id), std::string::npos) << bob_text;
    for (const auto& s : named(parse_prometheus(bob_text), "crucible_jobs"))
        EXPECT_EQ(s.value, 0) << s.labels.at("state");
    EXPECT_EQ(scrape("").first, 401);
    EXPECT_EQ(scrape("not-a-token").first, 401);
    as_alice.post("/v1/jobs/" + id + "/cancel", Json::object());
}

TEST(JobSnapshot, LatestProgressMetricAndEvalFromTheEndOfTheLog) {
    const auto dir = fresh_dir("snapshot");
    {
        EventLogWriter w(dir / "events.jsonl");
        w.append(make_eval(1, 10, {{"metrics/mAP50(B)", 0.25}}));
        w.append(make_progress(10, 100, 1, 10, 50.0, 90.0));
        w.append(make_metric(2, 15, {{"train/box_loss", 1.5}, {"lr/pg0", 0.01}}));
        w.append(make_eval(2, 20, {{"metrics/mAP50(B)", 0.5}, {"note", "text is left out"}}));
        w.append(make_progress(20, 100, 2, 10, 60.5, 80.0));
    }
    // A crash mid-line leaves a torn last line: passed over.
    {
        std::ofstream out(dir / "events.jsonl", std::ios::app | std::ios::binary);
        out << "{\"seq\":5,\"kind\":\"metr";
    }
    const auto s = jobs::latest_job_snapshot(dir);
    EXPECT_EQ(s.step, 20);
    EXPECT_EQ(s.total_steps, 100);
    EXPECT_EQ(s.epoch, 2);
    EXPECT_DOUBLE_EQ(s.items_per_s.value_or(0), 60.5);
    EXPECT_DOUBLE_EQ(s.eta_s.value_or(0), 80.0);
    EXPECT_EQ(s.train, (std::map<std::string, double>{{"lr/pg0", 0.01}, {"train/box_loss", 1.5}}));
    EXPECT_EQ(s.eval, (std::map<std::string, double>{{"metrics/mAP50(B)", 0.5}}));

    const auto none = jobs::latest_job_snapshot(dir / "missing");
    EXPECT_FALSE(none.step.has_value());
    EXPECT_TRUE(none.train.empty());
}

TEST(PrometheusText, LabelsAreEscapedAndNumbersReadBack) {
    EXPECT_EQ(prometheus_label_value("a\\b\"c\nd 划痕"), "a\\\\b\\\"c\\nd 划痕");
    EXPECT_EQ(prometheus_number(0.87), "0.87");
    EXPECT_EQ(prometheus_number(3), "3");
    EXPECT_EQ(prometheus_number(1e-9), "1e-09");
    EXPECT_EQ(std::stod(prometheus_number(0.1 + 0.2)), 0.1 + 0.2);
    EXPECT_EQ(prometheus_number(std::numeric_limits<double>::infinity()), "+Inf");
    EXPECT_EQ(prometheus_number(-std::numeric_limits<double>::infinity()), "-Inf");
    EXPECT_EQ(prometheus_number(std::nan("")), "NaN");
    PrometheusText t;
    t.family("x_total", "counter", "a\nb");
    t.sample("x_total", {{"k", "v\"1"}}, 2);
    t.sample("x_total", {}, 0.5);
    EXPECT_EQ(t.text(),
              "# HELP x_total a\\nb\n# TYPE x_total counter\nx_total{k=\"v\\\"1\"} 2\n"
              "x_total 0.5\n");
}
