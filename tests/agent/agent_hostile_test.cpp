// POSIX-only test: plays hostile clients through raw BSD sockets (tests/agent/raw_http.h) and
// reads the agent's memory from /proc (Winsock twin: open work).
// The agent under hostile load, on loopback: huge or countless header fields, a chunked body
// that never ends, slow heads (slowloris), hundreds of event streams, more connections from one
// address than it allows, a Range header with 1,500 ranges. Each case checks that the agent
// refuses what it must, answers /v1/health and GET /v1/jobs meanwhile, and keeps its memory
// (the real crucible-agent process's VmRSS). The cases that need short deadlines run an
// in-process net::HttpServer with them; each case takes a few seconds at most.
#include <gtest/gtest.h>

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <thread>
#include <vector>

#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/jobs/event_follower.h"
#include "core/net/http_server.h"
#include "core/net/open_files.h"
#include "tests/agent/agent_process.h"
#include "tests/agent/agent_test_util.h"

using namespace crucible;
using namespace crucible::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct HostileAgent : ::testing::Test {
    AgentProcess agent;

    void SetUp() override {
        net::raise_open_file_limit();  // this process holds hundreds of sockets too
        const auto name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
        ASSERT_TRUE(agent.start(CRUCIBLE_AGENT_EXE, CRUCIBLE_FAKE_WORKER, fresh_dir(name)))
            << "the agent did not start; see " << (agent.data / "agent-stdout.log");
    }
    void TearDown() override {
        // Jobs still running are canceled first: a worker outlives a killed agent.
        try {
            auto c = agent.client();
            for (const auto& job : c.jobs())
                if (!is_final_state(job.state)) c.control(job.id, net::JobAction::Cancel);
            wait_until([&] {
                for (const auto& job : c.jobs())
                    if (!is_final_state(job.state)) return false;
                return true;
            });
        } catch (const std::exception&) {
        }
        agent.stop();
        std::filesystem::remove_all(agent.data);
    }

    bool finished(const std::string& id) const {
        return is_final_state(agent.client().job(id).state);
    }

    std::string get_request(const std::string& path, bool with_token = true) const {
        return "GET " + path + " HTTP/1.1\r\nHost: agent\r\n" +
               (with_token ? agent.bearer() : std::string()) + "\r\n";
    }

    // Milliseconds of one GET answered 200 on a new connection from `source`; -1 otherwise.
    double timed_get(const std::string& path, const char* source = "127.0.0.1") const {
        const auto t0 = Clock::now();
        RawSocket s(agent.port, source);
        if (!s.connected() || !s.send(get_request(path))) return -1;
        const std::string answer = s.read_head(5s);
        return status_of(answer) == 200 ? ms_since(t0) : -1;
    }

    std::string submit(int steps, int delay_ms) {
        return agent.client()
            .post(net::routes::kSubmitJob.path(),
                  {{"task", "test.fake"}, {"options", {{"steps", steps}, {"delay_ms", delay_ms}}}})
            .at("id");
    }
};

}  // namespace

TEST_F(HostileAgent, HeaderLinesOfMegabytesAreRefusedWithoutGrowingTheAgent) {
    const long before = agent.rss_kb();
    // Eight at once, 4 MB each: an agent that kept them would grow by 32 MB or more.
    std::vector<std::thread> clients;
    std::atomic<int> refused{0}, answered{0};
    for (int i = 0; i < 8; ++i)
        clients.emplace_back([&] {
            RawSocket s(agent.port);
            s.send("GET " + net::routes::kHealth.path() + " HTTP/1.1\r\nHost: agent\r\nX-Big: ");
            const std::string piece(1 << 20, 'a');
            for (int mb = 0; mb < 4 && s.send(piece); ++mb) {
            }
            s.send("\r\n\r\n");
            const int status = status_of(s.read_head(5s));
            if (status == 431 || status == 0) ++refused;  // 0: closed without an answer
            if (status == 200) ++answered;
        });
    for (auto& t : clients)
        t.join();
    EXPECT_EQ(refused, 8);
    EXPECT_EQ(answered, 0);
    EXPECT_GE(timed_get(net::routes::kHealth.path()), 0);
    const long after = agent.rss_kb();
    EXPECT_LT(after - before, 4 * 1024) << "RSS " << before << " kB -> " << after << " kB";
}

TEST_F(HostileAgent, TenThousandHeaderFieldsAreRefused) {
    std::string head = "GET " + net::routes::kListJobs.path() + " HTTP/1.1\r\nHost: agent\r\n";
    for (int i = 0; i < 10000; ++i)
        head += "X-F" + std::to_string(i) + ": v\r\n";
    head += agent.bearer() + "\r\n";
    RawSocket s(agent.port);
    s.send(head);
    const std::string answer = s.read_head(5s);
    EXPECT_NE(status_of(answer), 200) << answer.substr(0, 200);
    EXPECT_TRUE(status_of(answer) == 431 || status_of(answer) == 0) << answer.substr(0, 200);
    // 101 small fields: over the count though far under the byte limit.
    std::string many = "GET " + net::routes::kHealth.path() + " HTTP/1.1\r\nHost: agent\r\n";
    for (std::size_t i = 0; i < net::HttpServerOptions{}.max_header_count; ++i)
        many += "X-" + std::to_string(i) + ": v\r\n";
    RawSocket t(agent.port);
    t.send(many + "\r\n");
    EXPECT_EQ(status_of(t.read_head(5s)), 431);
    EXPECT_GE(timed_get(net::routes::kListJobs.path()), 0);
}

TEST_F(HostileAgent, ChunkedBodyOverTheLimitIsRefusedWithoutGrowingTheAgent) {
    const long before = agent.rss_kb();
    RawSocket s(agent.port);
    ASSERT_TRUE(s.send("POST " + net::routes::kSubmitJob.path() +
                       " HTTP/1.1\r\nHost: agent\r\nContent-Type: application/json\r\n" +
                       agent.bearer() + "Transfer-Encoding: chunked\r\n\r\n"));
    // 128 MB in 64 KB chunks, twice the payload limit, sent until the agent stops reading.
    const std::string data(64 << 10, ' ');
    const std::string chunk = "10000\r\n" + data + "\r\n";
    std::uint64_t sent = 0;
    while (sent < (128u << 20) && s.send(chunk))
        sent += data.size();
    s.send("0\r\n\r\n");
    const std::string answer = s.read_head(10s);
    EXPECT_EQ(status_of(answer), 413) << answer.substr(0, 300);
    EXPECT_LE(sent, (128u << 20));
    EXPECT_GE(timed_get(net::routes::kHealth.path()), 0);
    const long after = agent.rss_kb();
    EXPECT_LT(after - before, 16 * 1024) << "RSS " << before << " kB -> " << after << " kB";
    // The same with a Content-Length over the limit: refused before a byte is read.
    RawSocket t(agent.port);
    t.send("POST " + net::routes::kSubmitJob.path() +
           " HTTP/1.1\r\nHost: agent\r\nContent-Type: application/json\r\n" + agent.bearer() +
           "Content-Length: " + std::to_string((64u << 20) + 1) + "\r\n\r\n{");
    EXPECT_EQ(status_of(t.read_head(5s)), 413);
}

TEST_F(HostileAgent, TwoHundredEventStreamsLeaveTheApiResponsive) {
    const std::string id = submit(150, 100);  // a job that writes an event every 100 ms
    std::vector<std::unique_ptr<RawSocket>> streams;
    const std::string request = "GET " + net::routes::kJobEvents.path({id}) +
                                " HTTP/1.1\r\nHost: agent\r\nAccept: text/event-stream\r\n" +
                                agent.bearer() + "\r\n";
    for (int i = 0; i < 200; ++i) {
        streams.push_back(std::make_unique<RawSocket>(agent.port));
        ASSERT_TRUE(streams.back()->send(request)) << "stream " << i;
    }
    int open = 0;
    for (auto& s : streams)
        open += status_of(s->read_head(5s)) == 200;
    EXPECT_EQ(open, 200);
    // With every stream open, the API answers at once: new connections, as a studio makes.
    std::vector<double> health, jobs;
    for (int i = 0; i < 30; ++i) {
        health.push_back(timed_get(net::routes::kHealth.path()));
        jobs.push_back(timed_get(net::routes::kListJobs.path()));
    }
    std::sort(health.begin(), health.end());
    std::sort(jobs.begin(), jobs.end());
    EXPECT_GE(health.front(), 0) << "a /v1/health request failed";
    EXPECT_GE(jobs.front(), 0) << "a GET /v1/jobs request failed";
    EXPECT_LT(health[15], 100) << "median /v1/health latency (ms)";
    EXPECT_LT(jobs[15], 100) << "median GET /v1/jobs latency (ms)";
    EXPECT_LT(health.back(), 1000);
    EXPECT_LT(jobs.back(), 1000);
    // The streams are live: each got an event since.
    int live = 0;
    for (auto& s : streams)
        live += s->read(3s, [](const std::string& t) {
                     return t.find("data: ") != t.npos;
                 }).find("data: ") != std::string::npos;
    EXPECT_EQ(live, 200);
}

TEST_F(HostileAgent, ConnectionsOverThePerAddressCapAreRefusedWhileOthersAreServed) {
    std::this_thread::sleep_for(200ms);  // the start-up's health checks have closed by now
    const std::size_t cap = net::HttpServerOptions{}.max_connections_per_address;
    std::vector<std::unique_ptr<RawSocket>> idle;
    for (std::size_t i = 0; i < cap; ++i) {
        idle.push_back(std::make_unique<RawSocket>(agent.port, "127.0.0.1"));
        ASSERT_TRUE(idle.back()->connected()) << i;
    }
    // The first of them is served (the cap counts it, it does not refuse it).
    ASSERT_TRUE(idle.front()->send(get_request(net::routes::kHealth.path())));
    EXPECT_EQ(status_of(idle.front()->read_head(5s)), 200);
    RawSocket extra(agent.port, "127.0.0.1");
    extra.send(get_request(net::routes::kHealth.path()));
    const std::string refused = extra.read(3s);
    EXPECT_EQ(status_of(refused), 0) << refused.substr(0, 200);
    EXPECT_TRUE(extra.peer_closed());
    // Another address is served meanwhile.
    EXPECT_GE(timed_get(net::routes::kHealth.path(), "127.0.0.2"), 0);
    EXPECT_GE(timed_get(net::routes::kListJobs.path(), "127.0.0.3"), 0);
    // Once some close, the address is served again.
    idle.resize(cap - 10);
    std::this_thread::sleep_for(200ms);
    EXPECT_GE(timed_get(net::routes::kHealth.path(), "127.0.0.1"), 0);
}

TEST_F(HostileAgent, DownloadsTakeOneRangeAndRefuseAThousandFiveHundred) {
    auto c = agent.client();
    const std::string id = submit(2, 1);
    ASSERT_TRUE(wait_until([&] { return finished(id); }));
    const std::string name = "artifacts/best.safetensors";
    const std::string file = read_file_bytes(agent.data / "jobs" / id / name);
    ASSERT_EQ(file.size(), 100000u);
    httplib::Client cli("127.0.0.1", agent.port);
    const std::string path = net::routes::kJobArtifact.path({id, name});
    const auto get = [&](const std::string& range) {
        return cli.Get(path.c_str(),
                       {{"Authorization", "Bearer " + agent.token}, {"Range", range}});
    };
    auto one = get("bytes=10-19");
    ASSERT_TRUE(one);
    EXPECT_EQ(one->status, 206);
    EXPECT_EQ(one->get_header_value("Content-Range"), "bytes 10-19/100000");
    EXPECT_EQ(one->body, file.substr(10, 10));
    auto tail = get("bytes=-7");
    ASSERT_TRUE(tail);
    EXPECT_EQ(tail->body, file.substr(file.size() - 7));
    auto outside = get("bytes=100000-");
    ASSERT_TRUE(outside);
    EXPECT_EQ(outside->status, 416);
    EXPECT_EQ(outside->get_header_value("Content-Range"), "bytes */100000");
    std::string many = "bytes=";  // 1,500 small overlapping ranges, 7 KB
    for (int i = 0; i < 1500; ++i) {
        if (i > 0) many += ',';
        many.append(std::to_string(i % 100)).append("-").append(std::to_string(i % 100));
    }
    auto refused = get(many);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 416);
    EXPECT_LT(refused->body.size(), 1000u);
    // If-Range with another ETag: the whole (new) file, not a piece of it.
    auto changed = cli.Get(path.c_str(), {{"Authorization", "Bearer " + agent.token},
                                          {"Range", "bytes=10-19"},
                                          {"If-Range", "\"1-2\""}});
    ASSERT_TRUE(changed);
    EXPECT_EQ(changed->status, 200);
    EXPECT_EQ(changed->body, file);
    // An empty file is an empty answer, not a cut connection.
    write_file_atomically(agent.data / "jobs" / id / "artifacts" / "empty.txt", "");
    EXPECT_EQ(agent.client().download(id, "artifacts/empty.txt", agent.data / "empty.txt"), 0u);
    // A target of 8 KB still routes (no stack overflow in the path regex); longer is 414.
    const std::string long_name = "artifacts/" + std::string(8000, 'x');
    auto long_path = cli.Get(net::routes::kJobArtifact.path({id, long_name}).c_str(),
                             {{"Authorization", "Bearer " + agent.token}});
    ASSERT_TRUE(long_path);
    EXPECT_EQ(long_path->status, 404);
    RawSocket s(agent.port);
    s.send(get_request("/" + std::string(9000, 'x')));
    EXPECT_EQ(status_of(s.read_head(5s)), 414);
}

TEST_F(HostileAgent, EightReadersOfALongEventLogHoldASliceEach) {
    const std::string id = submit(2, 1);
    ASSERT_TRUE(wait_until([&] { return finished(id); }));
    // 24 MB of events appended behind the job's back (it has ended: nobody else writes).
    const auto log = agent.data / "jobs" / id / "events.jsonl";
    const std::int64_t first = static_cast<std::int64_t>(read_event_log(log).size());
    {
        std::ofstream out(log, std::ios::binary | std::ios::app);
        const std::string pad(200, 'p');
        for (std::int64_t seq = first; out.tellp() < (24 << 20); ++seq)
            out << R"({"seq":)" << seq << R"(,"t":1.0,"kind":"log","level":"info","message":")"
                << pad << "\"}\n";
    }
    const long before = agent.rss_kb();
    std::atomic<long> peak{before};
    std::atomic<bool> reading{true};
    std::thread sampler([&] {
        while (reading) {
            peak = std::max(peak.load(), agent.rss_kb());
            std::this_thread::sleep_for(5ms);
        }
    });
    std::vector<std::thread> readers;
    std::atomic<int> complete{0};
    for (int i = 0; i < 8; ++i)
        readers.emplace_back([&] {
            RawSocket s(agent.port);
            s.send("GET " + net::routes::kJobEvents.path({id}) + "?format=json HTTP/1.1\r\n" +
                   "Host: agent\r\nConnection: close\r\n" + agent.bearer() + "\r\n");
            std::size_t bytes = 0;
            std::string tail;
            for (bool ended = false; !ended;) {  // read and drop, keeping the tail
                const std::string part =
                    s.read(10s, [](const std::string& t) { return t.size() > (1 << 20); });
                bytes += part.size();
                tail += part.substr(part.size() - std::min<std::size_t>(part.size(), 64));
                tail.erase(0, tail.size() - std::min<std::size_t>(tail.size(), 64));
                ended = s.peer_closed() || part.empty();
            }
            if (tail.find("]}\r\n0\r\n\r\n") != std::string::npos) ++complete;
            EXPECT_GT(bytes, 24u << 20);
        });
    for (auto& t : readers)
        t.join();
    reading = false;
    sampler.join();
    EXPECT_EQ(complete, 8);
    // Each reader holds about a slice (1 MB) and its answer's buffers, never the log.
    EXPECT_LT(peak - before, 64 * 1024) << "RSS " << before << " kB, peak " << peak << " kB";
}

TEST_F(HostileAgent, HeadPipeliningAndExpectContinueWork) {
    // HEAD: the fields of the GET, no body.
    RawSocket head(agent.port);
    head.send("HEAD " + net::routes::kHealth.path() + " HTTP/1.1\r\nHost: agent\r\n\r\n");
    std::string answer = head.read_head(5s);
    answer += head.read(200ms);  // a body would come right behind
    EXPECT_EQ(status_of(answer), 200);
    EXPECT_NE(answer.find("Content-Length: "), std::string::npos);
    EXPECT_EQ(body_of(answer), "");
    // Two requests in one write: two answers in order on the same connection.
    RawSocket both(agent.port);
    both.send(get_request(net::routes::kHealth.path()) +
              get_request(net::routes::kListJobs.path()));
    const std::string two =
        both.read(5s, [](const std::string& t) { return t.find("\"jobs\"") != std::string::npos; });
    EXPECT_EQ(status_of(two), 200);
    EXPECT_NE(two.find("\"status\""), std::string::npos);
    EXPECT_LT(two.find("\"status\""), two.find("\"jobs\""));
    // Expect: 100-continue: the body is asked for only once the request is admitted.
    const std::string body(1000, 'b');
    const std::string upload = "PUT " + net::routes::kPutUpload.path({std::string(40, 'a')}) +
                               " HTTP/1.1\r\nHost: agent\r\nContent-Type: "
                               "application/octet-stream\r\nExpect: 100-continue\r\n" +
                               "Content-Length: 1000\r\n";
    RawSocket put(agent.port);
    put.send(upload + agent.bearer() + "\r\n");
    EXPECT_EQ(status_of(put.read_head(5s)), 100);
    put.send(body);
    EXPECT_EQ(status_of(put.read_head(5s)), 202);
    RawSocket stranger(agent.port);  // without a token: refused at once, no 100
    stranger.send(upload + "\r\n");
    EXPECT_EQ(status_of(stranger.read_head(5s)), 401);
}

// --- Deadlines, against an in-process server with short ones -----------------------------------

namespace {

struct ShortDeadlines : ::testing::Test {
    std::filesystem::path dir = fresh_dir("short_deadlines");
    std::string token = net::TokenStore(dir / "tokens.json").create("tester");
    std::unique_ptr<net::HttpServer> server;
    int port = 0;

    void SetUp() override {
        net::HttpServerOptions o;
        o.head_timeout = std::chrono::seconds(2);
        o.idle_timeout = std::chrono::seconds(2);
        o.max_connections_per_address = 1000;
        o.threads = 4;
        server = std::make_unique<net::HttpServer>(
            o, std::make_shared<net::TokenStore>(dir / "tokens.json"));
        server->on(net::routes::kHealth, [](const httplib::Request&, httplib::Response& res) {
            net::send_json(res, 200, {{"status", "ok"}});
        });
        // An event stream with nothing to say, ever.
        server->on(net::routes::kStream, [](const httplib::Request&, httplib::Response& res) {
            res.set_chunked_content_provider("text/event-stream",
                                             [](size_t, httplib::DataSink&) { return true; });
        });
        port = server->start();
    }
    void TearDown() override {
        server->stop();
        std::filesystem::remove_all(dir);
    }
};

}  // namespace

TEST_F(ShortDeadlines, SlowHeadsAreClosedAtTheDeadlineWhileHealthAnswers) {
    const std::string head =
        "GET " + net::routes::kHealth.path() + " HTTP/1.1\r\nHost: agent\r\nX-Slow: 1\r\n\r\n";
    std::vector<std::unique_ptr<RawSocket>> slow;
    for (int i = 0; i < 50; ++i)
        slow.push_back(std::make_unique<RawSocket>(port));
    const auto t0 = Clock::now();
    std::vector<double> closed_after(slow.size(), -1);
    // A byte per connection every 100 ms (the head would take 6 s), for 4 s; the time each is
    // found closed is kept.
    std::thread drip([&] {
        for (std::size_t i = 0; i < head.size() && ms_since(t0) < 4000; ++i) {
            for (std::size_t c = 0; c < slow.size(); ++c)
                if (closed_after[c] < 0 &&
                    (slow[c]->closed_now() || !slow[c]->send(head.substr(i, 1))))
                    closed_after[c] = ms_since(t0);
            std::this_thread::sleep_for(100ms);
        }
    });
    std::vector<double> health;
    httplib::Client cli("127.0.0.1", port);
    for (int i = 0; i < 20; ++i) {
        const auto t = Clock::now();
        auto r = cli.Get(net::routes::kHealth.path().c_str());
        health.push_back(r && r->status == 200 ? ms_since(t) : -1);
        std::this_thread::sleep_for(50ms);
    }
    drip.join();
    std::sort(health.begin(), health.end());
    EXPECT_GE(health.front(), 0);
    EXPECT_LT(health.back(), 100) << "slowest /v1/health (ms) while 50 heads dripped in";
    for (double ms : closed_after) {
        EXPECT_GT(ms, 1500) << "closed before the 2 s head deadline";
        EXPECT_LT(ms, 3500) << "not closed at the 2 s head deadline";
    }
    EXPECT_TRUE(wait_until([&] { return server->connections() <= 1; }, 2s))
        << server->connections() << " connections still open";
}

TEST_F(ShortDeadlines, IdleKeptAliveConnectionsAreClosed) {
    RawSocket s(port);
    s.send("GET " + net::routes::kHealth.path() + " HTTP/1.1\r\nHost: agent\r\n\r\n");
    EXPECT_EQ(status_of(s.read_head(2s)), 200);
    const auto t0 = Clock::now();
    EXPECT_TRUE(s.wait_closed(4s));
    EXPECT_GT(ms_since(t0), 1500);
    // Connected, silent from the start: closed at the head deadline.
    RawSocket silent(port);
    EXPECT_TRUE(silent.wait_closed(4s));
}

TEST_F(ShortDeadlines, AClosedEventStreamIsLetGoAtOnce) {
    {
        RawSocket s(port);
        s.send("GET " + net::routes::kStream.path() + " HTTP/1.1\r\nHost: agent\r\n" +
               "Authorization: Bearer " + token + "\r\n\r\n");
        EXPECT_EQ(status_of(s.read_head(2s)), 200);
        EXPECT_EQ(server->connections(), 1u);
    }  // the client goes away; the stream would write nothing for ever
    EXPECT_TRUE(wait_until([&] { return server->connections() == 0; }, 1s))
        << server->connections() << " connections still open";
}

// --- The event log, a slice at a time ----------------------------------------------------------

TEST(EventFollowerSlices, ALongLogIsReadASliceAtATimeAndAnOverlongLineIsDropped) {
    auto dir = fresh_dir("follower_slices");
    const auto log = dir / "events.jsonl";
    {
        std::ofstream out(log, std::ios::binary);
        for (int seq = 0; seq < 3000; ++seq)
            out << R"({"seq":)" << seq << R"(,"t":1.0,"kind":"log","message":")"
                << std::string(1000, 'm') << "\"}\n";
        out << std::string(5u << 20, 'x') << "\n";  // no event is 5 MB long
        out << R"({"seq":3000,"t":1.0,"kind":"log","message":"after"})"
            << "\n";
    }
    jobs::EventFollower follower(log, -1, 256u << 10);
    std::size_t polls = 0, events = 0;
    std::int64_t last = -1;
    for (; !follower.caught_up() || polls == 0; ++polls) {
        const auto batch = follower.poll();
        EXPECT_LE(batch.size(), 260u) << "more than a 256 KB slice in one poll";
        for (const auto& e : batch) {
            EXPECT_EQ(e.seq, last + 1);
            last = e.seq;
        }
        events += batch.size();
        ASSERT_LT(polls, 1000u);
    }
    EXPECT_EQ(events, 3001u);
    EXPECT_EQ(last, 3000);
    EXPECT_GT(polls, 30u);
    std::size_t count = 0;
    jobs::EventFollower json(log, 2990, 1u << 20);
    std::string items;
    bool any = false;
    for (int json_polls = 0; json_polls < 100 && (json_polls == 0 || !json.caught_up());
         ++json_polls) {
        items += json.poll_json_items(count, any);
        any = any || count > 0;
    }
    const Json parsed = Json::parse("[" + items + "]");
    ASSERT_EQ(parsed.size(), 10u);
    EXPECT_EQ(parsed[0]["seq"], 2991);
    EXPECT_EQ(parsed[9]["message"], "after");
    std::filesystem::remove_all(dir);
}
