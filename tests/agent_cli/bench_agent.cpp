// POSIX-only test: measures memory with getrusage.
// Agent benchmarks on loopback, against an in-process AgentService (no worker runs):
//  (a) upload of a 256 MB file through ApiClient::upload_blob, plain HTTP and TLS, against curl
//      uploading the same file to the same kind of server (the baseline; goal >= 90%);
//  (b) SSE fan-out: 50 clients follow one job while a writer appends 1,000 events/s for ~10 s;
//      delivered, lost, duplicated, latency p50/p99 (event timestamp -> receive time);
//  (c) GET /v1/jobs latency p50/p99 under 20 concurrent clients.
// Usage: bench_agent [--mb N] [--rounds K] [--seconds S] [--clients C] [--rate R]
//                    [--skip-upload] [--skip-fanout] [--skip-latency] [--hash-first]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include "core/base/event.h"
#include "core/base/sha256.h"
#include "core/jobs/agent_service.h"
#include "core/net/api_client.h"
#include "core/net/tls.h"
#include "tests/support/temp_dir.h"

using namespace crucible;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

bool g_hash_first = false;  // --hash-first: hash the whole file before sending (no overlap)

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

double unix_now() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    auto i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(i, v.size() - 1)];
}

fs::path fresh_dir(const std::string& name) {
    return test_support::scratch_dir("bench_agent_" + name);
}

struct Agent {
    fs::path data;
    std::unique_ptr<jobs::AgentService> service;
    std::string token;
    int port = 0;
    bool tls = false;

    Agent(const std::string& name, bool with_tls, std::size_t threads = 96) {
        data = fresh_dir(name);
        jobs::AgentConfig c;
        c.data_dir = data;
        c.port = 0;
        c.scheduler.worker_program = CRUCIBLE_FAKE_WORKER;
        c.scheduler.max_cpu_jobs = 0;  // nothing runs: jobs stay queued
        c.scheduler.min_free_disk_bytes = 1 << 20;
        c.nvml_library = "/nonexistent/libnvidia-ml.so.1";
        c.threads = threads;
        if (with_tls) {
            auto paths = net::ensure_self_signed_certificate(
                net::self_signed_certificate_paths(data), "127.0.0.1");
            c.cert_file = paths.cert;
            c.key_file = paths.key;
        }
        service = std::make_unique<jobs::AgentService>(c);
        token = service->tokens().create("bench");
        port = service->start();
        tls = with_tls;
    }
    ~Agent() {
        service->stop();
        service.reset();
        std::error_code ec;
        fs::remove_all(data, ec);
    }
    std::string url() const {
        return std::string(tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port);
    }
    net::ApiClient client() const { return net::ApiClient({url(), token, service->fingerprint()}); }
};

// ---------------------------------------------------------------- (a) upload ----------------

void write_test_file(const fs::path& file, std::uint64_t bytes) {
    std::ofstream out(file, std::ios::binary);
    std::vector<std::uint64_t> block(1 << 17);  // 1 MiB
    std::uint64_t x = 0x9E3779B97F4A7C15ull;
    for (std::uint64_t done = 0; done < bytes; done += block.size() * 8) {
        for (auto& w : block) {  // xorshift: incompressible, fast
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            w = x;
        }
        out.write(
            reinterpret_cast<const char*>(block.data()),
            static_cast<std::streamsize>(std::min<std::uint64_t>(block.size() * 8, bytes - done)));
    }
}

bool have_curl() {
    return std::system("curl --version > /dev/null 2>&1") == 0;
}

// CPU seconds (user + system) of this process and of its waited-for children.
struct CpuTimes {
    double self = 0, children = 0;
};
CpuTimes cpu_now() {
    auto secs = [](const rusage& r) {
        return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
               static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
    };
    rusage self{}, children{};
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &children);
    return {secs(self), secs(children)};
}

struct Measured {
    double wall = -1;       // seconds; <0 on failure
    double cpu = 0;         // CPU seconds of everything involved: sender + agent (+ shell for curl)
    double agent_cpu = -1;  // curl runs: the agent's share (this process; curl is a child)
};

// curl uploads the file to /v1/blobs/<sha> the way the client does: 16 MB pieces with
// Content-Range (a single PUT is capped by the agent's 64 MB payload limit), all pieces in one
// curl process over one kept-alive connection (`--next`). The pieces are cut before the clock
// starts.
Measured curl_upload(const Agent& agent, const fs::path& file, const std::string& sha) {
    const std::uint64_t total = fs::file_size(file), piece = 16u << 20;
    auto pieces = agent.data / "pieces";
    fs::create_directories(pieces);
    std::string script = "curl -sS";
    {
        std::ifstream in(file, std::ios::binary);
        std::string buf;
        for (std::uint64_t off = 0, i = 0; off < total; off += piece, ++i) {
            std::uint64_t n = std::min(piece, total - off);
            buf.resize(n);
            in.read(buf.data(), static_cast<std::streamsize>(n));
            auto part = pieces / std::to_string(i);
            std::ofstream(part, std::ios::binary)
                .write(buf.data(), static_cast<std::streamsize>(n));
            if (i > 0) script += " --next";
            script += " -o '" + (agent.data / "curl.body").string() +
                      "' -w '%{http_code}\\n' -H 'Expect:' -H 'Authorization: Bearer " +
                      agent.token + "' -H 'Content-Type: application/octet-stream' -H " +
                      "'Content-Range: bytes " + std::to_string(off) + "-" +
                      std::to_string(off + n - 1) + "/" + std::to_string(total) + "' " +
                      (agent.tls ? "-k " : "") + "-T '" + part.string() + "' '" + agent.url() +
                      "/v1/blobs/" + sha + "'";
        }
    }
    script += " > '" + (agent.data / "curl.out").string() + "'";
    const CpuTimes c0 = cpu_now();
    auto t0 = Clock::now();
    int rc = std::system(script.c_str());
    Measured m;
    m.wall = seconds_since(t0);
    const CpuTimes c1 = cpu_now();
    m.cpu = (c1.self - c0.self) + (c1.children - c0.children);
    m.agent_cpu = c1.self - c0.self;
    std::ifstream in(agent.data / "curl.out");
    std::string code, last;
    while (in >> code)
        last = code;
    if (rc != 0 || last != "201") {
        std::ifstream body(agent.data / "curl.body");
        std::string text((std::istreambuf_iterator<char>(body)), {});
        std::printf("  curl failed (rc %d, HTTP %s): %.300s\n", rc, last.c_str(), text.c_str());
        m.wall = -1;
    }
    return m;
}

Measured client_upload(const Agent& agent, const fs::path& file, const std::string& sha) {
    auto c = agent.client();
    const CpuTimes c0 = cpu_now();
    auto t0 = Clock::now();
    std::string got = c.upload_blob(file, {}, 16u << 20,
                                    g_hash_first ? ~std::uint64_t{0} : std::uint64_t{32} << 20);
    Measured m;
    m.wall = seconds_since(t0);
    const CpuTimes c1 = cpu_now();
    m.cpu = c1.self - c0.self;
    if (got != sha) {
        std::printf("  WRONG HASH from upload_blob\n");
        m.wall = -1;
    }
    return m;
}

void bench_upload(std::uint64_t mb, int rounds) {
    const std::uint64_t bytes = mb << 20;
    auto dir = fresh_dir("upload_src");
    auto file = dir / "blob.bin";
    write_test_file(file, bytes);
    auto t_hash = Clock::now();
    const std::string sha = sha256_file(file);
    const double hash_s = seconds_since(t_hash);
    std::printf(
        "(a) upload of %llu MB on loopback, %d rounds, client and curl alternating (client "
        "SHA-256 of the file alone: %.2f s = %.0f MB/s)\n",
        static_cast<unsigned long long>(mb), rounds, hash_s, static_cast<double>(mb) / hash_s);
    const bool curl = have_curl();
    if (!curl) std::printf("  curl not installed: no baseline\n");
    for (bool tls : {false, true}) {
        std::vector<Measured> client_runs, curl_runs;
        for (int round = 0; round < rounds; ++round) {
            // Alternate which goes first, so a burst of load on the shared machine hits both.
            for (int k = 0; k < 2; ++k) {
                const bool client_turn = (k == 0) == (round % 2 == 0);
                if (client_turn) {
                    Agent agent(std::string("up_client_") + (tls ? "tls" : "plain"), tls);
                    Measured m = client_upload(agent, file, sha);
                    if (m.wall > 0) client_runs.push_back(m);
                } else if (curl) {
                    Agent agent(std::string("up_curl_") + (tls ? "tls" : "plain"), tls);
                    Measured m = curl_upload(agent, file, sha);
                    if (m.wall > 0) curl_runs.push_back(m);
                }
            }
        }
        if (client_runs.empty()) continue;
        auto best = [](const std::vector<Measured>& v) {
            return *std::min_element(v.begin(), v.end(), [](const Measured& a, const Measured& b) {
                return a.wall < b.wall;
            });
        };
        auto median_wall = [](std::vector<Measured> v) {
            std::vector<double> w;
            for (const auto& m : v)
                w.push_back(m.wall);
            return percentile(w, 50);
        };
        auto min_cpu = [](const std::vector<Measured>& v) {
            double c = 1e30;
            for (const auto& m : v)
                c = std::min(c, m.cpu);
            return c;
        };
        const double mbd = static_cast<double>(mb);
        const Measured bc = best(client_runs);
        std::printf(
            "  %-5s ApiClient::upload_blob: best %7.1f MB/s (%.2f s), median %7.1f MB/s, "
            "CPU %.2f s (client + agent, incl. hashing)\n",
            tls ? "TLS" : "plain", mbd / bc.wall, bc.wall, mbd / median_wall(client_runs),
            min_cpu(client_runs));
        if (curl_runs.empty()) continue;
        const Measured bu = best(curl_runs);
        std::printf(
            "  %-5s curl, 16 MB pieces:     best %7.1f MB/s (%.2f s), median %7.1f MB/s, "
            "CPU %.2f s (curl + agent)\n",
            tls ? "TLS" : "plain", mbd / bu.wall, bu.wall, mbd / median_wall(curl_runs),
            min_cpu(curl_runs));
        double agent_cpu = 1e30;
        for (const auto& m : curl_runs)
            agent_cpu = std::min(agent_cpu, m.agent_cpu);
        std::printf(
            "  %-5s sender CPU (total minus the agent's %.2f s): client %.2f s incl. hashing, "
            "curl %.2f s\n",
            tls ? "TLS" : "plain", agent_cpu, min_cpu(client_runs) - agent_cpu,
            min_cpu(curl_runs) - agent_cpu);
        std::printf(
            "  %-5s ratio client/curl: best %.0f%%, median %.0f%%, CPU curl/client %.0f%%; "
            "without the client's hashing: best %.0f%%\n",
            tls ? "TLS" : "plain", 100.0 * bu.wall / bc.wall,
            100.0 * median_wall(curl_runs) / median_wall(client_runs),
            100.0 * min_cpu(curl_runs) / min_cpu(client_runs),
            bc.wall > hash_s ? 100.0 * bu.wall / (bc.wall - hash_s) : 0.0);
    }
    fs::remove_all(dir);
}

// ---------------------------------------------------------------- (b) SSE fan-out -----------

void bench_fanout(int clients, int rate, double seconds) {
    Agent agent("fanout", false, static_cast<std::size_t>(clients) + 32);
    jobs::JobInfo job;
    job.task = "test.fake";
    auto stored = agent.service->registry().add(job);
    const std::string id = stored.id;
    EventLogWriter writer(agent.service->registry().folder(id) / "events.jsonl");

    struct Received {
        std::vector<std::int64_t> seqs;
        std::vector<double> latency_ms;
    };
    std::vector<Received> got(static_cast<std::size_t>(clients));
    std::atomic<int> connected{0};
    std::vector<std::thread> threads;
    // A first event so every client sees its stream open before the clock starts.
    writer.append(make_log("info", "start"));
    for (int i = 0; i < clients; ++i) {
        threads.emplace_back([&, i] {
            auto c = agent.client();
            auto& r = got[static_cast<std::size_t>(i)];
            r.seqs.reserve(static_cast<std::size_t>(rate * seconds) + 16);
            r.latency_ms.reserve(r.seqs.capacity());
            try {
                c.follow_events(id, -1, [&](const Event& e) {
                    double now = unix_now();
                    if (e.seq == 0) {
                        ++connected;
                        return true;
                    }
                    r.seqs.push_back(e.seq);
                    r.latency_ms.push_back(1000.0 * (now - e.t));
                    return true;
                });
            } catch (const std::exception& e) {
                std::printf("  client %d: %s\n", i, e.what());
            }
        });
    }
    auto wait_start = Clock::now();
    while (connected < clients && seconds_since(wait_start) < 60)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const int total = static_cast<int>(rate * seconds);
    auto t0 = Clock::now();
    for (int n = 0; n < total; ++n) {
        std::this_thread::sleep_until(t0 + std::chrono::microseconds(1'000'000LL * n / rate));
        Event e = make_log("info", "event " + std::to_string(n));
        e.t = unix_now();
        writer.append(e);
    }
    const double write_s = seconds_since(t0);
    agent.service->registry().update(id,
                                     [](jobs::JobInfo& j) { j.state = jobs::JobState::Succeeded; });
    for (auto& t : threads)
        t.join();

    long long delivered = 0, lost = 0, duplicated = 0, out_of_order = 0;
    std::vector<double> all_latency;
    for (const auto& r : got) {
        std::set<std::int64_t> unique(r.seqs.begin(), r.seqs.end());
        delivered += static_cast<long long>(unique.size());
        duplicated += static_cast<long long>(r.seqs.size() - unique.size());
        lost += total - static_cast<long long>(unique.size());
        for (std::size_t k = 1; k < r.seqs.size(); ++k)
            out_of_order += r.seqs[k] <= r.seqs[k - 1];
        all_latency.insert(all_latency.end(), r.latency_ms.begin(), r.latency_ms.end());
    }
    std::printf("(b) SSE fan-out: %d clients (%d connected), writer %d events in %.1f s (%.0f/s)\n",
                clients, connected.load(), total, write_s, total / write_s);
    std::printf("  delivered %lld of %lld, lost %lld, duplicated %lld, out of order %lld\n",
                delivered, static_cast<long long>(total) * clients, lost, duplicated, out_of_order);
    std::printf("  latency event.t -> received: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
                percentile(all_latency, 50), percentile(all_latency, 99),
                percentile(all_latency, 100));
}

// ---------------------------------------------------------------- (c) API latency -----------

void bench_latency(int clients, int requests_each) {
    Agent agent("latency", false);
    for (int i = 0; i < 50; ++i) {  // a realistic list: 50 jobs
        jobs::JobInfo job;
        job.task = "test.fake";
        job.name = "job " + std::to_string(i);
        agent.service->registry().add(job);
    }
    std::vector<std::vector<double>> lat(static_cast<std::size_t>(clients));
    std::atomic<int> errors{0};
    std::vector<std::thread> threads;
    auto t0 = Clock::now();
    for (int i = 0; i < clients; ++i) {
        threads.emplace_back([&, i] {
            auto c = agent.client();
            for (int k = 0; k < requests_each; ++k) {
                auto t = Clock::now();
                try {
                    auto j = c.get("/v1/jobs");
                    if (j["jobs"].size() != 50) ++errors;
                } catch (const std::exception&) {
                    ++errors;
                }
                lat[static_cast<std::size_t>(i)].push_back(1000.0 * seconds_since(t));
            }
        });
    }
    for (auto& t : threads)
        t.join();
    double wall = seconds_since(t0);
    std::vector<double> all;
    for (const auto& v : lat)
        all.insert(all.end(), v.begin(), v.end());
    std::printf(
        "(c) GET /v1/jobs (50 jobs listed), %d concurrent clients x %d requests: "
        "p50 %.2f ms, p99 %.2f ms, max %.2f ms, %.0f req/s, %d errors\n",
        clients, requests_each, percentile(all, 50), percentile(all, 99), percentile(all, 100),
        static_cast<double>(all.size()) / wall, errors.load());
    std::printf("  (ApiClient opens one connection per request)\n");
}

}  // namespace

int main(int argc, char** argv) {
    std::uint64_t mb = 256;
    double seconds = 10;
    int clients = 50, rate = 1000;
    bool upload = true, fanout = true, latency = true;
    int rounds = 3;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
        if (a == "--mb")
            mb = std::strtoull(next().c_str(), nullptr, 10);
        else if (a == "--seconds")
            seconds = std::atof(next().c_str());
        else if (a == "--clients")
            clients = std::atoi(next().c_str());
        else if (a == "--rate")
            rate = std::atoi(next().c_str());
        else if (a == "--rounds")
            rounds = std::max(1, std::atoi(next().c_str()));
        else if (a == "--hash-first")
            g_hash_first = true;
        else if (a == "--skip-upload")
            upload = false;
        else if (a == "--skip-fanout")
            fanout = false;
        else if (a == "--skip-latency")
            latency = false;
        else {
            std::fprintf(stderr, "unknown argument %s\n", a.c_str());
            return 2;
        }
    }
    if (mb == 0 || seconds <= 0 || clients <= 0 || rate <= 0) {
        std::fprintf(stderr, "bad arguments\n");
        return 2;
    }
    std::printf("bench_agent: %u hardware threads\n", std::thread::hardware_concurrency());
    try {
        if (upload) bench_upload(mb, rounds);
        if (fanout) bench_fanout(clients, rate, seconds);
        if (latency) bench_latency(20, 200);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_agent: %s\n", e.what());
        return 1;
    }
    return 0;
}
