// POSIX-only test: holds a thousand raw BSD sockets with epoll (tests/agent/raw_http.h) and
// reads the agent's memory from /proc.
// The agent under hostile load, measured from outside: the real crucible-agent process with
// the fake worker, and its memory from /proc/<pid>/status.
//  (a) /v1/health and an authenticated GET /v1/jobs, each on a new connection, with no load;
//  (b) the same while 1,000 connections are held open without finishing a request (half send
//      nothing, half drip a never-ending head a byte a second; closed ones are opened again at
//      once) from 127.0.0.2..127.0.0.9, and 500 clients follow one running job's events (SSE)
//      from 127.0.1.x: latency min/p50/p99/max and the agent's RSS before and under load;
//  (c) 8 readers of a 50 MB events.jsonl from its start (?format=json) and 8 SSE readers of
//      it: the agent's peak RSS (each used to load the whole rest of the log: +2.4 GB).
// Goal: (b) answers under 100 ms and RSS under 200 MB.
// Usage: bench_agent_load [--slow N] [--sse N] [--seconds S] [--log-mb M] [--skip-log]
//                         [--skip-load]
//                         [--agent PATH]   (another crucible-agent build, to compare)
#include <sys/epoll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/base/event.h"
#include "core/net/api_client.h"
#include "core/net/open_files.h"
#include "tests/agent/agent_process.h"
#include "tests/support/temp_dir.h"

using namespace crucible;
using namespace crucible::test;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Stats {
    double min = 0, p50 = 0, p99 = 0, max = 0;
    std::size_t n = 0, failed = 0;
};

Stats stats_of(std::vector<double> v) {
    Stats s;
    s.failed = static_cast<std::size_t>(std::count(v.begin(), v.end(), -1.0));
    v.erase(std::remove(v.begin(), v.end(), -1.0), v.end());
    s.n = v.size();
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    const auto at = [&](double p) {
        return v[std::min(v.size() - 1,
                          static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
    };
    s.min = v.front();
    s.p50 = at(0.5);
    s.p99 = at(0.99);
    s.max = v.back();
    return s;
}

// One GET on a new connection from 127.0.0.1; milliseconds to the whole answer, -1 unless 200.
double timed_get(const AgentProcess& agent, const std::string& path) {
    const auto t0 = Clock::now();
    RawSocket s(agent.port);
    if (!s.connected()) return -1;
    if (!s.send("GET " + path + " HTTP/1.1\r\nHost: agent\r\nConnection: close\r\n" +
                agent.bearer() + "\r\n"))
        return -1;
    const std::string answer = s.read(std::chrono::seconds(10));
    return status_of(answer) == 200 ? ms_since(t0) : -1;
}

// Health and jobs requests alternately for `seconds`, 10 ms apart; the agent's RSS is sampled
// meanwhile.
struct Measured {
    Stats health, jobs;
    long rss_max_kb = 0;
};

Measured measure(const AgentProcess& agent, double seconds) {
    std::vector<double> health, jobs;
    std::atomic<bool> running{true};
    std::atomic<long> rss_max{agent.rss_kb()};
    std::thread sampler([&] {
        while (running) {
            rss_max = std::max(rss_max.load(), agent.rss_kb());
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    });
    const auto t0 = Clock::now();
    while (ms_since(t0) < seconds * 1000) {
        health.push_back(timed_get(agent, net::routes::kHealth.path()));
        jobs.push_back(timed_get(agent, net::routes::kListJobs.path()));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    running = false;
    sampler.join();
    return {stats_of(health), stats_of(jobs), rss_max};
}

// Holds `count` connections that never finish a request, from 127.0.0.2..127.0.0.9: the even
// ones send nothing, the odd ones a head that never ends, a byte a second. One the agent
// closes (at its head deadline) is opened again at once.
class IdleCrowd {
  public:
    IdleCrowd(int port, int count) : port_(port), count_(count) {
        thread_ = std::thread([this] { run(); });
    }
    ~IdleCrowd() {
        running_ = false;
        thread_.join();
    }
    int open() const { return open_; }
    long reopened() const { return reopened_; }

  private:
    std::unique_ptr<RawSocket> connect(int i) {
        const std::string source = "127.0.0." + std::to_string(2 + i % 8);
        auto s = std::make_unique<RawSocket>(port_, source.c_str());
        if (s->connected() && i % 2 == 1)
            s->send("GET " + net::routes::kHealth.path() + " HTTP/1.1\r\nHost: agent\r\nX-Slow: ");
        return s;
    }
    void run() {
        std::vector<std::unique_ptr<RawSocket>> sockets(static_cast<std::size_t>(count_));
        for (int i = 0; i < count_; ++i)
            sockets[static_cast<std::size_t>(i)] = connect(i);
        while (running_) {
            int alive = 0;
            for (int i = 0; i < count_ && running_; ++i) {
                auto& s = sockets[static_cast<std::size_t>(i)];
                const bool gone =
                    !s->connected() || s->closed_now() || (i % 2 == 1 && !s->send("a"));
                if (gone) {
                    s = connect(i);
                    ++reopened_;
                }
                alive += s->connected();
            }
            open_ = alive;
            for (int t = 0; t < 10 && running_; ++t)
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }

    int port_, count_;
    std::atomic<bool> running_{true};
    std::atomic<int> open_{0};
    std::atomic<long> reopened_{0};
    std::thread thread_;
};

// `count` SSE clients of one job's events from 127.0.1.1..127.0.1.4, reading everything with
// one epoll thread.
class EventCrowd {
  public:
    EventCrowd(const AgentProcess& agent, const std::string& path, int count) {
        epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
        const std::string request = "GET " + path +
                                    " HTTP/1.1\r\nHost: agent\r\nAccept: text/event-stream\r\n" +
                                    agent.bearer() + "\r\n";
        for (int i = 0; i < count; ++i) {
            const std::string source = "127.0.1." + std::to_string(1 + i % 4);
            auto s = std::make_unique<RawSocket>(agent.port, source.c_str());
            if (!s->connected() || !s->send(request)) continue;
            epoll_event ev{};
            ev.events = EPOLLIN;
            ev.data.u32 = static_cast<std::uint32_t>(sockets_.size());
            ::epoll_ctl(epoll_, EPOLL_CTL_ADD, s->fd(), &ev);
            sockets_.push_back(std::move(s));
            open_flags_.push_back(1);
        }
        open_ = static_cast<int>(sockets_.size());
        thread_ = std::thread([this] { run(); });
    }
    ~EventCrowd() {
        running_ = false;
        thread_.join();
        ::close(epoll_);
    }
    int open() const { return open_; }
    long long bytes() const { return bytes_; }
    long long events() const { return events_; }

  private:
    void run() {
        std::vector<epoll_event> ready(256);
        std::vector<char> buf(1 << 16);
        while (running_) {
            const int n = ::epoll_wait(epoll_, ready.data(), static_cast<int>(ready.size()), 100);
            for (int k = 0; k < n; ++k) {
                const auto i = ready[static_cast<std::size_t>(k)].data.u32;
                const ssize_t got = ::recv(sockets_[i]->fd(), buf.data(), buf.size(), 0);
                if (got <= 0) {
                    ::epoll_ctl(epoll_, EPOLL_CTL_DEL, sockets_[i]->fd(), nullptr);
                    if (open_flags_[i]) --open_;
                    open_flags_[i] = 0;
                    continue;
                }
                bytes_ += got;
                const std::string_view text(buf.data(), static_cast<std::size_t>(got));
                for (std::size_t p = text.find("\ndata: "); p != text.npos;
                     p = text.find("\ndata: ", p + 1))
                    ++events_;
            }
        }
    }

    int epoll_ = -1;
    std::vector<std::unique_ptr<RawSocket>> sockets_;
    std::vector<char> open_flags_;
    std::atomic<bool> running_{true};
    std::atomic<int> open_{0};
    std::atomic<long long> bytes_{0}, events_{0};
    std::thread thread_;
};

void print_row(const char* name, const Stats& s) {
    std::printf("  %-34s %6zu %6zu %8.2f %8.2f %8.2f %8.2f\n", name, s.n, s.failed, s.min, s.p50,
                s.p99, s.max);
}

void print_latency(const char* title, const Measured& m) {
    std::printf("%s\n  %-34s %6s %6s %8s %8s %8s %8s\n", title, "request", "n", "failed", "min ms",
                "p50 ms", "p99 ms", "max ms");
    print_row("GET /v1/health", m.health);
    print_row("GET /v1/jobs (authenticated)", m.jobs);
}

std::string submit(const AgentProcess& agent, int steps, int delay_ms) {
    return agent.client()
        .post(net::routes::kSubmitJob.path(),
              {{"task", "test.fake"}, {"options", {{"steps", steps}, {"delay_ms", delay_ms}}}})
        .at("id");
}

// (c): a finished job's log grown to `mb` MB, read from its start by 8 JSON and 8 SSE readers.
void long_log(const AgentProcess& agent, int mb) {
    auto c = agent.client();
    const std::string id = submit(agent, 2, 1);
    for (int i = 0; i < 500 && !is_final_state(c.job(id).state); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto log = agent.data / "jobs" / id / "events.jsonl";
    {
        const std::int64_t first = static_cast<std::int64_t>(read_event_log(log).size());
        std::ofstream out(log, std::ios::binary | std::ios::app);
        const std::string pad(200, 'p');
        for (std::int64_t seq = first; out.tellp() < (static_cast<std::int64_t>(mb) << 20); ++seq)
            out << R"({"seq":)" << seq << R"(,"t":1.0,"kind":"log","level":"info","message":")"
                << pad << "\"}\n";
    }
    const long before = agent.rss_kb();
    std::atomic<bool> running{true};
    std::atomic<long> peak{before};
    std::thread sampler([&] {
        while (running) {
            peak = std::max(peak.load(), agent.rss_kb());
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    });
    const auto t0 = Clock::now();
    std::atomic<long long> bytes{0};
    std::vector<std::thread> readers;
    for (int i = 0; i < 16; ++i)
        readers.emplace_back([&, i] {
            RawSocket s(agent.port);
            const std::string path =
                net::routes::kJobEvents.path({id}) + (i % 2 == 0 ? "?format=json" : "?after=-1");
            s.send("GET " + path + " HTTP/1.1\r\nHost: agent\r\nConnection: close\r\n" +
                   agent.bearer() + "\r\n");
            for (;;) {  // until the agent ends the answer (the job is over: SSE ends too)
                const std::string part = s.read(std::chrono::seconds(30), [](const std::string& t) {
                    return t.size() >= (1 << 20);
                });
                bytes += static_cast<long long>(part.size());
                if (part.empty() || s.peer_closed()) break;
            }
        });
    for (auto& t : readers)
        t.join();
    const double seconds = ms_since(t0) / 1000;
    running = false;
    sampler.join();
    std::printf("(c) 8 JSON + 8 SSE readers of a %d MB events.jsonl from its start\n", mb);
    std::printf("  read %.0f MB in %.1f s; agent RSS %.1f MB before, peak %.1f MB (+%.1f MB)\n",
                static_cast<double>(bytes) / (1 << 20), seconds,
                static_cast<double>(before) / 1024.0, static_cast<double>(peak) / 1024.0,
                static_cast<double>(peak - before) / 1024.0);
}

// (a) and (b).
void under_load(const AgentProcess& agent, int slow, int sse, double seconds) {
    // A running job that writes an event every 100 ms, for the event streams.
    const std::string job = submit(agent, 100000, 100);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const long rss_idle = agent.rss_kb();
    const Measured quiet = measure(agent, std::min(seconds, 5.0));
    print_latency("(a) no load", quiet);

    IdleCrowd crowd(agent.port, slow);
    EventCrowd streams(agent, net::routes::kJobEvents.path({job}), sse);
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const int crowd_open = crowd.open(), streams_open = streams.open();
    const long rss_loaded = agent.rss_kb();
    const Measured loaded = measure(agent, seconds);
    std::printf("\n");
    print_latency("(b) under load", loaded);
    std::printf(
        "  held: %d of %d idle/slow connections (%ld reopened after the agent closed them), "
        "%d of %d event streams (%d open at the end, %lld events, %.1f MB received)\n",
        crowd_open, slow, crowd.reopened(), streams_open, sse, streams.open(), streams.events(),
        static_cast<double>(streams.bytes()) / (1 << 20));
    std::printf(
        "  agent RSS: %.1f MB before load, %.1f MB with it open, %.1f MB max while measured\n",
        static_cast<double>(rss_idle) / 1024.0, static_cast<double>(rss_loaded) / 1024.0,
        static_cast<double>(loaded.rss_max_kb) / 1024.0);
    const bool goal = loaded.health.failed == 0 && loaded.jobs.failed == 0 &&
                      loaded.health.max < 100 && loaded.jobs.max < 100 &&
                      loaded.rss_max_kb < 200 * 1024;
    std::printf("  goal (every answer < 100 ms, RSS < 200 MB): %s\n\n", goal ? "met" : "MISSED");
    for (int i = 0; i < 100; ++i) {  // an agent that did not hold may need a while
        try {
            agent.client().control(job, net::JobAction::Cancel);
            break;
        } catch (const std::exception&) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    int slow = 1000, sse = 500, log_mb = 50;
    double seconds = 15;
    bool with_log = true, with_load = true;
    std::string agent_exe = CRUCIBLE_AGENT_EXE;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : "0"; };
        if (a == "--slow")
            slow = std::atoi(next().c_str());
        else if (a == "--sse")
            sse = std::atoi(next().c_str());
        else if (a == "--seconds")
            seconds = std::atof(next().c_str());
        else if (a == "--log-mb")
            log_mb = std::atoi(next().c_str());
        else if (a == "--skip-log")
            with_log = false;
        else if (a == "--skip-load")
            with_load = false;
        else if (a == "--agent")
            agent_exe = next();
        else {
            std::fprintf(stderr, "unknown argument %s\n", a.c_str());
            return 2;
        }
    }
    net::raise_open_file_limit();
    test_support::TempDir dir("bench_agent_load");
    AgentProcess agent;
    if (!agent.start(agent_exe, CRUCIBLE_FAKE_WORKER, dir / "agent")) {
        std::fprintf(stderr, "bench_agent_load: the agent did not start\n");
        return 1;
    }
    std::printf("bench_agent_load: crucible-agent pid %ld, %u hardware threads\n",
                agent.child->pid(), std::thread::hardware_concurrency());
    try {
        if (with_load) under_load(agent, slow, sse, seconds);
        if (with_log) long_log(agent, log_mb);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_agent_load: %s\n", e.what());
        return 1;
    }
    return 0;
}
