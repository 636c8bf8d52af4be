// POSIX-only test: the veth variant makes network namespaces with ip(8) and checks the user id.
// [B2 6/8] item 7: one run over two servers. Two real crucible-agent processes on loopback,
// each the other's peer (agent.json "cluster"), run the real crucible-worker: a person submits
// to agent a with `--servers b`; a serves the store and rank 0, uploads the dataset to b and
// submits b's share (rank 1). The run is one job with one set of curves on a; b's job ends with
// it. A share whose store is not at a peer is refused, and so is an unknown server; cancelling
// the run on a ends the ranks on b.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "core/base/child_process.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/job_folder.h"
#include "core/base/secret_store.h"
#include "core/base/tcp_listeners.h"
#include "core/data/synth/synth.h"
#include "core/jobs/agent_secrets.h"
#include "core/net/api_client.h"
#include "core/net/tls.h"
#include "core/net/token_store.h"
#include "tests/support/free_port.h"
#include "tests/support/temp_dir.h"

using namespace crucible;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

struct Server {
    std::string name;
    fs::path data;
    std::unique_ptr<ChildProcess> agent;
    std::string token;       // the person's token
    std::string peer_token;  // the token this server gave the other agent (its shares' owner)
    std::string host = "127.0.0.1";
    std::string netns;        // the network namespace its agent runs in ("" = this process's)
    std::string fingerprint;  // off loopback: its TLS certificate's, made before it starts
    int port = 0;
    int gate_port = 0;  // agent.json's cluster ports: one, where its launchers' gates listen

    std::string url() const {
        return (fingerprint.empty() ? "http://" : "https://") + host + ":" + std::to_string(port);
    }
    net::ApiClient client() const { return net::ApiClient({url(), token, fingerprint}); }
    // As the other agent: a share belongs to the token that agent holds, not to the person.
    net::ApiClient peer_client() const { return net::ApiClient({url(), peer_token, fingerprint}); }
    fs::path job_dir(const std::string& id) const { return data / "jobs" / id; }
};

struct ClusterRun : ::testing::Test {
    test_support::TempDir root{"cluster_run"};
    Server a, b;
    fs::path yaml, config;
    int cli_runs = 0;

    // Where the servers live: both on loopback here; ClusterRunOverVeth moves b.
    virtual void make_network() {}
    // The proxies each launcher opens for the other server's rank: none when both servers are
    // one machine (the rank's own listener is there already).
    virtual int proxies_per_server() const { return 0; }

    void SetUp() override {
        make_network();
        if (IsSkipped() || HasFatalFailure()) return;
        data::SynthOptions so;
        so.train = 8;
        so.val = 4;
        so.classes = 2;
        so.imgsz = 64;
        yaml = data::write_synth_dataset(root / "shapes", so);
        config = root / "config";
        fs::create_directories(config);
        a.name = "a";
        b.name = "b";
        for (Server* s : {&a, &b}) {
            s->data = root / s->name;
            fs::create_directories(s->data);
            s->token = net::TokenStore(s->data / "tokens.json").create("person");
            s->port = test_support::free_loopback_port();
            s->gate_port = test_support::free_loopback_port();
            // Off loopback an agent serves TLS: its certificate is made now, so that the other
            // agent's agent.json can pin it.
            if (s->host != "127.0.0.1")
                s->fingerprint = net::certificate_fingerprint_file(
                    net::ensure_self_signed_certificate(net::self_signed_certificate_paths(s->data),
                                                        s->host)
                        .cert);
        }
        // Each agent holds a token the other made for it.
        b.peer_token = net::TokenStore(b.data / "tokens.json").create("agent-a");
        a.peer_token = net::TokenStore(a.data / "tokens.json").create("agent-b");
        configure(a, b, b.peer_token);
        configure(b, a, a.peer_token);
        start(a);
        start(b);
    }
    void TearDown() override {
        for (Server* s : {&a, &b})
            if (s->agent) {
                s->agent->kill();
                s->agent->wait();
            }
        remove_network();
    }
    virtual void remove_network() {}

    // As the admin of each server sets it up: the cluster address and ports in agent.json, the
    // peer with `crucible agent peer add` (its token through the environment, into the agent's
    // secret store; the peer is not up yet, so unchecked).
    void configure(const Server& self, const Server& peer, const std::string& token_for_peer) {
        const Json cluster = {{"host", self.host}, {"ports", {self.gate_port, self.gate_port}}};
        write_json_file(self.data / "agent.json", Json{{"cluster", cluster}});
        std::vector<std::string> add = {"agent",     "peer",     "add",    peer.name,
                                        "--url",     peer.url(), "--data", path_to_utf8(self.data),
                                        "--no-check"};
        if (!peer.fingerprint.empty()) add.insert(add.end(), {"--fingerprint", peer.fingerprint});
        const auto added = crucible(add, {{"CRUCIBLE_PEER_TOKEN", token_for_peer}});
        ASSERT_EQ(added.first, 0) << added.second;
        EXPECT_EQ(read_file_bytes(self.data / "agent.json").find(token_for_peer),
                  std::string::npos);
    }

    void start(Server& s) {
        ChildOptions o;
        o.program = CRUCIBLE_AGENT_EXE;
        o.args = {"--listen",       s.host + ":" + std::to_string(s.port),
                  "--data",         path_to_utf8(s.data),
                  "--worker",       CRUCIBLE_REAL_WORKER,
                  "--nvml",         "/nonexistent/libnvidia-ml.so.1",
                  "--max-cpu-jobs", "2"};
        // Off loopback the agents talk plain HTTP to each other on the test's private link.
        if (!s.netns.empty()) {  // `ip netns exec` enters the namespace and execs the agent
            o.args.insert(o.args.begin(), {"netns", "exec", s.netns, CRUCIBLE_AGENT_EXE});
            o.program = "/usr/sbin/ip";
        }
        o.log_file = root / (s.name + "-agent.log");
        s.agent = ChildProcess::start(o);
        for (int i = 0; i < 500; ++i) {
            try {
                if (s.client().get("/v1/health")["status"] == "ok") return;
            } catch (const std::exception&) {
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        FAIL() << "agent " << s.name << " did not come up: " << read_file_bytes(o.log_file);
    }

    // `crucible remote ...` as the person runs it, with a's address as remote "a".
    std::pair<int, std::string> crucible(const std::vector<std::string>& args,
                                         const std::map<std::string, std::string>& env = {}) {
        ChildOptions o;
        o.program = CRUCIBLE_CLI_EXE;
        o.args = args;
        o.env = env;
        o.env["CRUCIBLE_CONFIG_DIR"] = path_to_utf8(config);
        o.working_dir = root;
        o.log_file = root / ("cli" + std::to_string(cli_runs++) + ".log");
        const int code = ChildProcess::start(o)->wait().code;
        return {code, read_file_bytes(o.log_file)};
    }

    std::string submit(int epochs) {
        auto add = crucible({"remote", "add", "a", a.url(), "--token", a.token, "--yes"});
        EXPECT_EQ(add.first, 0) << add.second << diagnosis();
        auto r = crucible({"remote", "submit", "a", "detect.yolo", "--servers", "b",
                           "data=" + path_to_utf8(yaml), "model=yolov8n",
                           "epochs=" + std::to_string(epochs), "imgsz=64", "batch=4", "device=cpu",
                           "workers=1", "log_steps=1"});
        EXPECT_EQ(r.first, 0) << r.second;
        std::string out = r.second;
        while (!out.empty() && out.back() == '\n')
            out.pop_back();
        return out.substr(out.rfind('\n') + 1);
    }

    net::JobInfo wait_until(const Server& s, const std::string& id, double limit_s,
                            const std::function<bool(const net::JobInfo&)>& done) {
        const auto t0 = Clock::now();
        net::JobInfo j;
        while (std::chrono::duration<double>(Clock::now() - t0).count() < limit_s) {
            j = (s.name == "b" ? s.peer_client() : s.client()).job(id);
            if (done(j)) return j;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        ADD_FAILURE() << "job " << id << " on " << s.name << " still " << job_state_name(j.state)
                      << " after " << limit_s << " s: " << j.reason << "\n"
                      << read_file_bytes(s.job_dir(id) / "worker.log");
        return j;
    }
    net::JobInfo wait_until_ended(const Server& s, const std::string& id, double limit_s) {
        return wait_until(s, id, limit_s,
                          [](const net::JobInfo& j) { return is_final_state(j.state); });
    }

    // A two-epoch run from a with b's rank: one job with one set of curves on a, b's share
    // succeeded with it.
    void run_two_epochs_and_check() {
        // Every port anything listens on at a's network address while the run goes on.
        std::set<int> listening;
        std::atomic<bool> ended{false};
        std::thread watch([&] {
            while (!ended) {
                for (int port : listening_tcp_ports(a.host))
                    listening.insert(port);
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
        });
        const std::string id = submit(2);
        const net::JobInfo run = wait_until_ended(a, id, 60);
        ended = true;
        watch.join();
        // Off loopback: only the agent's API and the launcher's gate face the network; the
        // store and every rank's Gloo listener stay on loopback.
        if (a.host != "127.0.0.1") {
            EXPECT_EQ(listening, (std::set<int>{a.port, a.gate_port}));
        }
        ASSERT_EQ(run.state, JobState::Succeeded) << run.reason << "\n" << diagnosis();
        ASSERT_EQ(run.parts.size(), 1u);
        EXPECT_EQ(run.parts[0].server, "b");
        const std::string share_id = run.parts[0].job;
        ASSERT_FALSE(share_id.empty());
        const net::JobInfo share = wait_until_ended(b, share_id, 60);
        EXPECT_EQ(share.state, JobState::Succeeded) << share.reason;
        EXPECT_EQ(share.part_of, a.host + "/" + id);

        // a's log says where its ranks sit; b's rank 1 trained (its own log) and b wrote no curves.
        EXPECT_NE(read_file_bytes(a.job_dir(id) / "worker.log").find("ranks 0..0 of 2"),
                  std::string::npos);
        const JobFolder theirs{b.job_dir(share_id)};
        EXPECT_TRUE(fs::exists(theirs.rank_log(1)));
        // Gloo's connections between the servers went through the launchers' gates.
        const std::string reached = std::to_string(proxies_per_server()) +
                                    (proxies_per_server() == 1 ? " proxy" : " proxies");
        EXPECT_NE(read_file_bytes(a.job_dir(id) / "worker.log")
                      .find("ranks 0..0 of 2: the other servers' ranks reached through " + reached),
                  std::string::npos);
        EXPECT_NE(read_file_bytes(theirs.worker_log())
                      .find("ranks 1..1 of 2: the other servers' ranks reached through " + reached),
                  std::string::npos)
            << read_file_bytes(theirs.worker_log());
        EXPECT_FALSE(fs::exists(theirs.results_csv()));
        // One point per global step: batch 4 over 8 images, two epochs.
        std::vector<std::int64_t> steps;
        for (const auto& e : read_event_log(JobFolder{a.job_dir(id)}.events()))
            if (e.kind == "metric" && e.fields["values"].contains("train/box_loss"))
                steps.push_back(e.step());
        EXPECT_EQ(steps, (std::vector<std::int64_t>{1, 2, 3, 4}));
    }

    // Both agents' logs and every log in their job folders, for a failure's message.
    std::string diagnosis() const {
        std::string out;
        for (const Server* s : {&a, &b}) {
            out += "---- " + s->name + "-agent.log\n" +
                   read_file_bytes(root.path() / (s->name + "-agent.log"));
            std::error_code ec;
            for (const auto& e : fs::recursive_directory_iterator(s->data / "jobs", ec))
                if (e.path().extension() == ".log")
                    out += "---- " + path_to_utf8(e.path()) + "\n" + read_file_bytes(e.path());
        }
        return out;
    }

    // The processes whose command line names `folder` (ranks, launchers).
    static int processes_naming(const fs::path& folder) {
        int n = 0;
        for (const auto& entry : fs::directory_iterator("/proc")) {
            std::ifstream in(entry.path() / "cmdline", std::ios::binary);
            const std::string cmdline((std::istreambuf_iterator<char>(in)),
                                      std::istreambuf_iterator<char>());
            n += cmdline.find(path_to_utf8(folder)) != std::string::npos;
        }
        return n;
    }
};

TEST_F(ClusterRun, TwoServersRunOneJobWithOneSetOfCurves) {
    run_two_epochs_and_check();
}

// `crucible agent peer add` asks the peer before it stores anything: a token the peer did not make
// is refused and nothing is kept; `list` shows peers without their tokens; `remove` forgets both.
TEST_F(ClusterRun, PeersAreAddedWithACheckedTokenListedWithoutItAndRemoved) {
    const std::string data = path_to_utf8(a.data);
    const auto secrets = [&] { return SecretStore::open_file(jobs::agent_secrets_file(a.data)); };
    auto wrong = crucible({"agent", "peer", "add", "b2", "--url", b.url(), "--data", data},
                          {{"CRUCIBLE_PEER_TOKEN", "crt_not_made_by_b"}});
    EXPECT_NE(wrong.first, 0);
    EXPECT_NE(wrong.second.find("does not take this token"), std::string::npos) << wrong.second;
    EXPECT_FALSE(secrets()->get(jobs::peer_token_secret("b2")));
    auto right = crucible({"agent", "peer", "add", "b2", "--url", b.url(), "--data", data},
                          {{"CRUCIBLE_PEER_TOKEN", b.peer_token}});
    ASSERT_EQ(right.first, 0) << right.second;
    EXPECT_EQ(secrets()->get(jobs::peer_token_secret("b2")).value_or(""), b.peer_token);
    auto list = crucible({"agent", "peer", "list", "--data", data});
    ASSERT_EQ(list.first, 0) << list.second;
    EXPECT_NE(list.second.find("b\t" + b.url()), std::string::npos) << list.second;
    EXPECT_NE(list.second.find("b2\t" + b.url()), std::string::npos) << list.second;
    EXPECT_EQ(list.second.find(b.peer_token), std::string::npos) << "list shows no token";
    auto removed = crucible({"agent", "peer", "remove", "b2", "--data", data});
    ASSERT_EQ(removed.first, 0) << removed.second;
    EXPECT_FALSE(secrets()->get(jobs::peer_token_secret("b2")));
    EXPECT_EQ(read_file_bytes(a.data / "agent.json").find("b2"), std::string::npos);
    EXPECT_NE(crucible({"agent", "peer", "remove", "b2", "--data", data}).first, 0);
}

TEST_F(ClusterRun, StrangersAndUnknownServersAreRefused) {
    // A share whose store is not at one of b's peers: no stranger starts ranks on b.
    net::SubmitRequest r;
    r.task = "detect.yolo";
    r.options = {{"data", "dataset:nothing"}, {"device", "cpu"}};
    ServerShare share;
    share.first_rank = 1;
    share.world_size = 2;
    share.store_host = "10.9.9.9";
    share.store_port = 29400;
    share.key = std::string(kShareKeyHexDigits, 'e');
    r.share = share;
    r.part_of = "evil/job";
    try {
        b.peer_client().submit(r);
        ADD_FAILURE() << "b accepted a share from a stranger's store";
    } catch (const net::ApiError& e) {
        EXPECT_EQ(e.status(), 400);
        EXPECT_NE(std::string(e.what()).find("not at one of this agent's peers"), std::string::npos)
            << e.what();
    }
    // A share from a real peer whose LibTorch speaks Gloo's other transport (a Windows server
    // to a Linux one, or back): refused at once, where its ranks would have waited for each
    // other until the timeout.
    r.share->store_host = a.host;
    r.share->gloo_transport = std::string(kGlooTransport) == "tcp" ? "uv" : "tcp";
    r.part_of = a.host + "/job-1";
    try {
        b.peer_client().submit(r);
        ADD_FAILURE() << "b accepted a share whose ranks cannot talk to its own";
    } catch (const net::ApiError& e) {
        EXPECT_EQ(e.status(), 400);
        EXPECT_NE(std::string(e.what()).find("cannot mix Windows and Linux servers"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_TRUE(b.peer_client().jobs().empty());
    // A server a does not know.
    net::SubmitRequest unknown;
    unknown.task = "detect.yolo";
    unknown.options = {{"device", "cpu"}};
    unknown.servers = {{"c", std::nullopt, {}}};
    try {
        a.client().submit(unknown);
        ADD_FAILURE() << "a accepted an unknown server";
    } catch (const net::ApiError& e) {
        EXPECT_NE(std::string(e.what()).find("'c' is not a peer"), std::string::npos) << e.what();
    }
}

TEST_F(ClusterRun, CancellingTheRunEndsTheRanksOnTheOtherServer) {
    const std::string id = submit(500);
    const net::JobInfo started = wait_until(a, id, 120, [](const net::JobInfo& j) {
        return is_final_state(j.state) || (!j.parts.empty() && !j.parts[0].job.empty());
    });
    ASSERT_FALSE(started.parts.empty());
    const std::string share_id = started.parts[0].job;
    ASSERT_FALSE(share_id.empty()) << started.reason;
    // Both sides train: b's rank 1 has logged a step.
    const JobFolder theirs{b.job_dir(share_id)};
    const auto logged_a_step = [&] {
        std::error_code ec;
        return fs::exists(theirs.rank_log(1), ec) &&
               read_file_bytes(theirs.rank_log(1)).find("step") != std::string::npos;
    };
    for (int i = 0; i < 1200 && !logged_a_step(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_TRUE(logged_a_step()) << diagnosis();
    // Only a's rank 0 keeps checkpoints: such a run cannot pause (yet), on either side.
    for (auto [server, job] : {std::pair{&a, id}, std::pair{&b, share_id}}) {
        try {
            (server == &b ? server->peer_client() : server->client())
                .control(job, net::JobAction::Pause);
            ADD_FAILURE() << "a pause of " << job << " was accepted";
        } catch (const net::ApiError& e) {
            EXPECT_EQ(e.status(), 409);
            EXPECT_NE(std::string(e.what()).find("cannot pause"), std::string::npos) << e.what();
        }
    }
    a.client().control(id, net::JobAction::Cancel);
    EXPECT_EQ(wait_until_ended(a, id, 120).state, JobState::Canceled);
    const net::JobInfo share = wait_until_ended(b, share_id, 60);
    EXPECT_TRUE(is_final_state(share.state));
    EXPECT_EQ(processes_naming(theirs.dir), 0);
    EXPECT_EQ(processes_naming(a.job_dir(id)), 0);
}

// The same run between two network namespaces joined by a veth pair, the agents talking TLS:
// b's agent and its ranks live in a namespace of their own and reach a only over the link.
struct ClusterRunOverVeth : ClusterRun {
    std::string ns;

    int ip(const std::vector<std::string>& args) {
        ChildOptions o;
        o.program = "/usr/sbin/ip";
        o.args = args;
        o.log_file = root / "ip.log";
        return ChildProcess::start(o)->wait().code;
    }
    void make_network() override {
        if (::geteuid() != 0)
            GTEST_SKIP() << "making a network namespace and a veth pair needs root, and this "
                            "test does not run as root (the loopback tests above still ran)";
        const std::string tag = std::to_string(::getpid() % 100000);
        ns = "crucible-" + tag;
        const std::string link_a = "cra" + tag, link_b = "crb" + tag;
        const std::string subnet = "10.77." + std::to_string(::getpid() % 250) + ".";
        a.host = subnet + "1";
        b.host = subnet + "2";
        b.netns = ns;
        const std::vector<std::vector<std::string>> steps = {
            {"netns", "add", ns},
            {"link", "add", link_a, "type", "veth", "peer", "name", link_b},
            {"link", "set", link_b, "netns", ns},
            {"addr", "add", a.host + "/24", "dev", link_a},
            {"link", "set", link_a, "up"},
            {"-n", ns, "addr", "add", b.host + "/24", "dev", link_b},
            {"-n", ns, "link", "set", link_b, "up"},
            {"-n", ns, "link", "set", "lo", "up"}};
        for (const auto& step : steps)
            ASSERT_EQ(ip(step), 0)
                << "ip " << step[0] << " " << step[1] << ": " << read_file_bytes(root / "ip.log");
    }
    int proxies_per_server() const override { return 1; }
    void remove_network() override {
        if (!ns.empty()) ip({"netns", "del", ns});  // takes the veth pair with it
    }
};

TEST_F(ClusterRunOverVeth, TwoNamespacesRunOneJobWithOneSetOfCurves) {
    run_two_epochs_and_check();
}

}  // namespace
