// POSIX-only test: forks rank processes from the test itself.
// Data-parallel training on c10d (issue [B2 6/8]): the toy worker launches 2 or 3 CPU ranks on
// loopback (Gloo). N ranks with global batch B end with the weights one process reaches with
// batch B (float32: within a tolerance, the all-reduce sums in another order); only rank 0
// writes events and files; a rank killed mid-epoch ends the run with a status naming it and no
// process left; the run resumes from its last checkpoint to the uninterrupted run's weights,
// also on another number of ranks.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "core/base/file_io.h"
#include "core/base/job_control.h"
#include "core/base/rank_plan.h"
#include "core/engine/distributed.h"
#include "core/engine/safetensors_torch.h"
#include "tests/engine/test_util.h"
#include "tests/support/free_port.h"

namespace crucible::engine {
namespace {

using namespace testing;

// 64 samples / batch 8 = 8 steps per epoch, 2 epochs; nbs 16 -> gradients of 2 micro-batches
// are accumulated before each optimizer step (and averaged across ranks only then). No dropout
// and no BatchNorm: both depend on which rank sees which sample. Step checkpoints every 2 steps
// fall on optimizer steps.
Json options(int ranks) {
    return {{"epochs", 2},       {"batch", 8},
            {"samples", 64},     {"nbs", 16},
            {"workers", 1},      {"seed", 5},
            {"dropout", 0.0},    {"batchnorm", false},
            {"log_steps", 1},    {"checkpoint_steps", 2},
            {"device", "cpu"},   {"ranks", ranks},
            {"dist_timeout", 60}};
}

std::map<std::string, torch::Tensor> weights(const std::filesystem::path& dir) {
    return load_safetensors(dir / "artifacts" / "weights" / "last.safetensors");
}

// The largest absolute difference between two runs' final weights.
double max_weight_difference(const std::filesystem::path& a, const std::filesystem::path& b) {
    const auto wa = weights(a), wb = weights(b);
    EXPECT_EQ(wa.size(), wb.size());
    double worst = 0;
    for (const auto& [name, t] : wa) {
        EXPECT_TRUE(wb.count(name)) << name;
        if (!wb.count(name)) continue;
        worst = std::max(worst, (t - wb.at(name)).abs().max().item<double>());
    }
    return worst;
}

// Processes whose command line names `dir` (a rank left behind).
int processes_naming(const std::filesystem::path& dir) {
    int found = 0;
    const std::string needle = path_to_utf8(dir);
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        std::ifstream in(entry.path() / "cmdline", std::ios::binary);
        std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (cmdline.find(needle) != std::string::npos) ++found;
    }
    return found;
}

// The toy worker started without waiting for it (the launcher of a distributed job).
pid_t start_child(const std::filesystem::path& dir) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::unsetenv("CRUCIBLE_FAULT");
        const std::string job = dir.string();
        ::execl(ENGINE_TOY_WORKER, ENGINE_TOY_WORKER, "--job", job.c_str(),
                static_cast<char*>(nullptr));
        std::_Exit(127);
    }
    return pid;
}

// Waits up to `seconds` for `done`; false when it never came.
template <class F>
bool wait_for(double seconds, F done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
        if (done()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return done();
}

// True when the run's log (its `log` events) has a message containing `text`.
bool logged(const std::filesystem::path& dir, const std::string& text) {
    for (const auto& e : events_of(dir))
        if (e.kind == "log" &&
            e.fields["message"].get<std::string>().find(text) != std::string::npos)
            return true;
    return false;
}

Event last_status(const std::filesystem::path& dir) {
    Event status;
    for (const auto& e : events_of(dir))
        if (e.kind == "status") status = e;
    return status;
}

class Distributed : public ::testing::Test {
  protected:
    // One process with batch 8, and the same run on 2 ranks (batch 8 = 4 + 4).
    static void SetUpTestSuite() {
        single_ = new std::filesystem::path(fresh_dir("dist_single"));
        write_toy_spec(*single_, options(1));
        ASSERT_EQ(run_child(*single_, false, "").exit_code, 0);
        two_ = new std::filesystem::path(fresh_dir("dist_two"));
        write_toy_spec(*two_, options(2));
        ASSERT_EQ(run_child(*two_, false, "").exit_code, 0);
    }
    static void TearDownTestSuite() {
        std::filesystem::remove_all(*single_);
        std::filesystem::remove_all(*two_);
        delete single_;
        delete two_;
    }
    static std::filesystem::path* single_;
    static std::filesystem::path* two_;
};

std::filesystem::path* Distributed::single_ = nullptr;
std::filesystem::path* Distributed::two_ = nullptr;

TEST_F(Distributed, TwoRanksReachTheWeightsOfOneProcessWithTheGlobalBatch) {
    // 16 optimizer steps of SGD in float32; the ranks' all-reduce adds in another order.
    EXPECT_LT(max_weight_difference(*single_, *two_), 1e-5);
    // Rank 0 alone wrote events: one metric point per step, one set of curves, with the mean
    // loss over both ranks' halves (the single process's loss within float error).
    std::vector<std::pair<std::int64_t, double>> one, two;
    for (const auto& e : events_of(*single_))
        if (e.kind == "metric" && e.fields["values"].contains("train/mse_loss"))
            one.emplace_back(e.step(), e.fields["values"]["train/mse_loss"].get<double>());
    for (const auto& e : events_of(*two_))
        if (e.kind == "metric" && e.fields["values"].contains("train/mse_loss"))
            two.emplace_back(e.step(), e.fields["values"]["train/mse_loss"].get<double>());
    ASSERT_EQ(one.size(), two.size());
    for (std::size_t k = 0; k < one.size(); ++k) {
        EXPECT_EQ(one[k].first, two[k].first);
        EXPECT_NEAR(one[k].second, two[k].second, 1e-4 * std::max(1.0, one[k].second)) << k;
    }
    EXPECT_EQ(last_status(*two_).fields["state"], "succeeded");
    EXPECT_EQ(csv_of(*two_).size(), csv_of(*single_).size());
    // Rank 1 kept its own log and wrote none of rank 0's files.
    EXPECT_TRUE(std::filesystem::exists(*two_ / "worker.rank1.log"));
    EXPECT_TRUE(logged(*two_, "rank 0 of 2")) << "the first log line says which rank of how many";
}

TEST_F(Distributed, ThreeRanksWithUnevenSlicesWeighTheirShare) {
    // Batch 8 over 3 ranks: slices of 2, 3 and 3 samples.
    const auto dir = fresh_dir("dist_three");
    write_toy_spec(dir, options(3));
    ASSERT_EQ(run_child(dir, false, "").exit_code, 0);
    EXPECT_LT(max_weight_difference(*single_, dir), 1e-5);
    std::filesystem::remove_all(dir);
}

TEST_F(Distributed, ALastBatchTooShortForEveryRankIsLeftOutAndABatchBelowTheRanksRefused) {
    // 65 samples in batches of 8: the 9th batch holds 1 sample, which 3 ranks cannot share.
    const auto dir = fresh_dir("dist_short");
    Json o = options(3);
    o["samples"] = 65;
    write_toy_spec(dir, o);
    ASSERT_EQ(run_child(dir, false, "").exit_code, 0);
    std::int64_t last_step = 0;
    for (const auto& e : events_of(dir))
        if (e.kind == "metric") last_step = std::max(last_step, e.step());
    EXPECT_EQ(last_step, 16) << "8 batches in each of 2 epochs";
    EXPECT_TRUE(logged(dir, "is left out"));
    std::filesystem::remove_all(dir);

    const auto small = fresh_dir("dist_small_batch");
    o = options(3);
    o["batch"] = 2;
    write_toy_spec(small, o);
    EXPECT_EQ(run_child(small, false, "").exit_code, 1);
    EXPECT_NE(last_status(small).fields["reason"].get<std::string>().find("at least one item each"),
              std::string::npos)
        << last_status(small).fields.dump();
    EXPECT_EQ(processes_naming(small), 0);
    std::filesystem::remove_all(small);
}

TEST_F(Distributed, AKilledRankEndsTheRunNamingItAndResumeMatchesTheUninterruptedRun) {
    const auto dir = fresh_dir("dist_kill");
    write_toy_spec(dir, options(2));
    const auto start = std::chrono::steady_clock::now();
    const auto killed = run_child(dir, false, "after_step:5@1");  // rank 1 dies after step 5
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(killed.exit_code, 1);
    EXPECT_LT(seconds, 50.0) << "ended by the peer's broken connection, not the 60 s timeout";
    EXPECT_EQ(processes_naming(dir), 0) << "no rank outlives the launcher";
    const Event status = last_status(dir);
    EXPECT_EQ(status.fields["state"], "failed");
    EXPECT_EQ(status.fields["rank"], 1);
    EXPECT_EQ(status.fields["device"], "cpu");
    EXPECT_NE(status.fields["reason"].get<std::string>().find("rank 1 of 2"), std::string::npos)
        << status.fields.dump();
    EXPECT_NE(status.fields["reason"].get<std::string>().find("signal 9"), std::string::npos)
        << status.fields.dump();
    EXPECT_FALSE(status.fields["log_tail"].empty());

    // Resume on 2 ranks from the step-4 checkpoint: the uninterrupted run's weights, exactly.
    const auto resumed = run_child(dir, true, "");
    ASSERT_EQ(resumed.exit_code, 0);
    EXPECT_EQ(weights_sha(dir, "last"), weights_sha(*two_, "last"));
    EXPECT_EQ(csv_of(dir), csv_of(*two_));
    std::filesystem::remove_all(dir);
}

TEST_F(Distributed, ARankFailingWithItsOwnErrorIsNamedRatherThanItsPeer) {
    // Rank 1 fails with an error of its own (as out of memory would); rank 0 then fails only
    // because rank 1 left the collective. The status names rank 1 and quotes its error.
    const auto dir = fresh_dir("dist_fail");
    write_toy_spec(dir, options(2));
    EXPECT_EQ(run_child(dir, false, "fail_after_step:3@1").exit_code, 1);
    const Event status = last_status(dir);
    EXPECT_EQ(status.fields["rank"], 1) << status.fields.dump();
    EXPECT_NE(status.fields["reason"].get<std::string>().find("an injected failure after step 3"),
              std::string::npos)
        << status.fields.dump();
    EXPECT_EQ(processes_naming(dir), 0);
    std::filesystem::remove_all(dir);
}

TEST_F(Distributed, AStopRequestStopsEveryRankAtOneStepAndTheRunResumes) {
    // Waiting before the start: rank 0 takes it after step 1, inside an accumulation window, so
    // the checkpoint holds the ranks' averaged partial gradients.
    const auto dir = fresh_dir("dist_stop");
    write_toy_spec(dir, options(2));
    write_stop_request(JobFolder{dir}, StopRequest::Checkpoint);
    EXPECT_EQ(run_child(dir, false, "").exit_code, 5);  // interrupted, checkpointed
    EXPECT_EQ(last_status(dir).fields["state"], "interrupted");
    EXPECT_EQ(last_status(dir).fields["step"], 1);
    EXPECT_EQ(processes_naming(dir), 0);
    ASSERT_EQ(run_child(dir, true, "").exit_code, 0);
    EXPECT_LT(max_weight_difference(*two_, dir), 1e-5);
    std::filesystem::remove_all(dir);
}

TEST_F(Distributed, AHungRankEndsTheRunAtTheCollectiveTimeout) {
    const auto dir = fresh_dir("dist_hang");
    Json o = options(2);
    o["dist_timeout"] = 10;
    write_toy_spec(dir, o);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(run_child(dir, false, "hang_after_step:3@1").exit_code, 1);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 50.0) << "10 s timeout + the launcher's 10 s grace";
    EXPECT_EQ(processes_naming(dir), 0);
    const std::string reason = last_status(dir).fields["reason"].get<std::string>();
    EXPECT_NE(reason.find("rank(s) 1 did not end"), std::string::npos) << reason;
    std::filesystem::remove_all(dir);
}

TEST_F(Distributed, RanksWhoseLauncherDiesCheckpointAndStop) {
    const auto dir = fresh_dir("dist_orphan");
    Json o = options(2);
    o["epochs"] = 5000;  // minutes: it must be running when its launcher is killed
    o["log_steps"] = 20;
    o["checkpoint_steps"] = 0;
    o["val"] = false;
    write_toy_spec(dir, o);
    const pid_t launcher = start_child(dir);
    const bool training = wait_for(60, [&] {
        if (!std::filesystem::exists(dir / "events.jsonl")) return false;
        for (const auto& e : events_of(dir))
            if (e.kind == "metric") return true;
        return false;
    });
    ::kill(launcher, SIGKILL);
    int status = 0;
    ::waitpid(launcher, &status, 0);
    ASSERT_TRUE(training) << "the ranks never reported a step";
    EXPECT_TRUE(wait_for(20, [&] { return processes_naming(dir) == 0; }))
        << "ranks outlived their launcher";
    const Event last = last_status(dir);
    EXPECT_EQ(last.fields["state"], "interrupted") << last.fields.dump();
    EXPECT_TRUE(logged(dir, "rank launcher"));
    std::filesystem::remove_all(dir);
}

TEST_F(Distributed, ARunCheckpointedOnTwoRanksResumesOnOne) {
    const auto dir = fresh_dir("dist_world_change");
    write_toy_spec(dir, options(2));
    ASSERT_EQ(run_child(dir, false, "after_step:9@0").exit_code, 1);  // rank 0 dies in epoch 2
    write_toy_spec(dir, options(1));
    ASSERT_EQ(run_child(dir, true, "").exit_code, 0);
    // The same global batches from the checkpoint's position on: one process's weights within
    // float error of the 2-rank run, every epoch in results.csv once.
    EXPECT_LT(max_weight_difference(*two_, dir), 1e-5);
    EXPECT_EQ(csv_of(dir).size(), csv_of(*two_).size());
    EXPECT_TRUE(logged(dir, "written by 2 rank(s); this run has 1"))
        << "the change of world size is in the run's log";
    std::filesystem::remove_all(dir);
}

// [B2 6/8] item 7, below the agents: the two job folders two servers' agents make for one run
// (each a share of the world in its spec.json, as the agents write it), started at once.
TEST_F(Distributed, ARunSplitOverTwoServersMatchesTheRunOnOneMachine) {
    const std::filesystem::path first = fresh_dir("dist_split_0"),
                                second = fresh_dir("dist_split_1");
    // The first server's gate serves the store's port; the second's a port of its own.
    const int port = test_support::free_loopback_port();
    const int second_gate = test_support::free_loopback_port();
    for (int rank = 0; rank < 2; ++rank) {
        const auto& dir = rank == 0 ? first : second;
        write_toy_spec(dir, options(1));
        ServerShare share;
        share.first_rank = rank;
        share.world_size = 2;
        share.store_host = "127.0.0.1";
        share.store_port = port;
        share.host = "127.0.0.1";
        share.gate_port = rank == 0 ? port : second_gate;
        share.key = std::string(kShareKeyHexDigits, '7');
        Json spec = read_json_file(dir / "spec.json");
        spec[kSpecServerShare] = share.to_json();
        write_json_file(dir / "spec.json", spec);
    }
    const pid_t a = start_child(first), b = start_child(second);
    int status_a = 0, status_b = 0;
    ::waitpid(a, &status_a, 0);
    ::waitpid(b, &status_b, 0);
    EXPECT_TRUE(WIFEXITED(status_a) && WEXITSTATUS(status_a) == 0);
    EXPECT_TRUE(WIFEXITED(status_b) && WEXITSTATUS(status_b) == 0);
    // The same two ranks as on one machine: the 2-rank run's weights and one set of curves on
    // the server with rank 0; the other server's launcher says how its ranks ended.
    EXPECT_LT(max_weight_difference(*two_, first), 1e-6);
    EXPECT_EQ(csv_of(first).size(), csv_of(*two_).size());
    EXPECT_FALSE(std::filesystem::exists(second / "results.csv"));
    EXPECT_EQ(last_status(second).fields["state"], "succeeded");
    EXPECT_TRUE(std::filesystem::exists(second / "worker.rank1.log"));
    std::filesystem::remove_all(first);
    std::filesystem::remove_all(second);
}

// The TCP sockets this process listens on, as /proc/net shows them: the local address in
// /proc's hex (the other processes of the machine are left out by inode).
std::vector<std::string> listening_addresses_of_this_process() {
    std::set<std::string> inodes;
    for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        const std::string target = std::filesystem::read_symlink(fd.path(), ec).string();
        if (!ec && target.rfind("socket:[", 0) == 0)
            inodes.insert(target.substr(8, target.size() - 9));
    }
    std::vector<std::string> out;
    for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream in(table);
        std::string line;
        std::getline(in, line);  // the heading
        while (std::getline(in, line)) {
            std::istringstream fields(line);
            std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
            fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
                timeout >> inode;
            if (state == "0A" && inodes.count(inode)) out.push_back(local);  // 0A: LISTEN
        }
    }
    return out;
}

// 127.0.0.1, ::1 or ::ffff:127.0.0.1 in /proc's hex, any port.
bool loopback_in_proc_hex(const std::string& local) {
    const std::string address = local.substr(0, local.find(':'));
    return address == "0100007F" || address == "00000000000000000000000001000000" ||
           address == "0000000000000000FFFF00000100007F";
}

// Ranks 0 and 1 of a CPU run on loopback, in this process.
std::vector<std::unique_ptr<Collective>> two_ranks_on_loopback() {
    const int port = test_support::free_loopback_port();
    std::vector<std::unique_ptr<Collective>> ranks(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
        threads.emplace_back([&, r] {
            const RankAddress a{r, 2, std::string("127.0.0.1"), port, std::string("cpu")};
            ranks[static_cast<std::size_t>(r)] = Collective::connect(a, std::chrono::seconds(60));
        });
    for (auto& t : threads)
        t.join();
    return ranks;
}

// Both ranks sum {1} and {2}; each must end with 3.
void expect_ranks_sum(std::vector<std::unique_ptr<Collective>>& ranks) {
    std::vector<std::thread> threads;
    std::vector<std::vector<double>> sums = {{1.0}, {2.0}};
    for (int r = 0; r < 2; ++r)
        threads.emplace_back(
            [&, r] { ranks[static_cast<std::size_t>(r)]->sum(sums[static_cast<std::size_t>(r)]); });
    for (auto& t : threads)
        t.join();
    EXPECT_EQ(sums[0][0], 3.0);
    EXPECT_EQ(sums[1][0], 3.0);
}

// The rendezvous store and Gloo listen on loopback for a run on one server: left to
// themselves, the store listened on every address of the machine and Gloo on the host name's,
// open to the network for the whole run.
TEST(DistributedListening, TheStoreAndGlooListenOnLoopbackOnly) {
    auto ranks = two_ranks_on_loopback();
    ASSERT_TRUE(ranks[0] && ranks[1]);
    const auto listening = listening_addresses_of_this_process();
    ASSERT_GE(listening.size(), 2u) << "the store and at least one Gloo listener";
    for (const std::string& local : listening)
        EXPECT_TRUE(loopback_in_proc_hex(local)) << "listens beyond loopback: " << local;
    expect_ranks_sum(ranks);  // still a working pair of ranks
}

// A TCP connection to 127.0.0.1:port that sends `bytes`; -1 when it could not connect.
int connect_and_send(int port, const std::string& bytes) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<std::uint16_t>(port));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
        if (fd >= 0) ::close(fd);
        return -1;
    }
    for (std::size_t sent = 0; sent < bytes.size();) {
        const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;  // the other side closed: refusing is allowed
        sent += static_cast<std::size_t>(n);
    }
    return fd;
}

// The store's and Gloo's listening ports take the same outside bytes as any server: on one
// machine every local user reaches them, and across servers Gloo's faces the network. Strangers
// sending junk, guessing Gloo's 8-byte connection numbers, or holding connections open must
// not stop or change the ranks' collectives.
TEST(DistributedListening, StrangersAtTheStoreAndGlooPortsDoNotDisturbTheRanks) {
    auto ranks = two_ranks_on_loopback();
    ASSERT_TRUE(ranks[0] && ranks[1]);
    std::vector<int> ports;
    for (const std::string& local : listening_addresses_of_this_process())
        ports.push_back(std::stoi(local.substr(local.find(':') + 1), nullptr, 16));
    ASSERT_GE(ports.size(), 3u) << "the store and each rank's Gloo listener";

    std::mt19937 random(7);
    const auto junk = [&](std::size_t n) {
        std::string bytes(n, '\0');
        for (char& c : bytes)
            c = static_cast<char>(random() & 0xFF);
        return bytes;
    };
    std::string numbers;  // Gloo's connection numbers 0..7, as an initiator sends them
    for (std::uint64_t seq = 0; seq < 8; ++seq)
        numbers.append(reinterpret_cast<const char*>(&seq), sizeof seq);
    const std::vector<std::string> hostile = {
        "",                                   // connect and leave
        junk(8),                              // one connection number's worth
        junk(100000),                         // a flood
        std::string(64, '\0'),                // zeros: a header of empty sizes
        std::string(64, '\xff'),              // the largest sizes
        numbers,                              // guessed connection numbers
        "GET / HTTP/1.1\r\nHost: x\r\n\r\n",  // a scanner
        "\xe4\xb8\xad\xe6\x96\x87\xff\xfe",   // Chinese and non-UTF-8 bytes
    };
    std::vector<int> held;  // left open across the collectives below
    for (int p : ports) {
        for (const std::string& bytes : hostile) {
            const int fd = connect_and_send(p, bytes);
            if (fd >= 0) ::close(fd);
        }
        for (int k = 0; k < 20; ++k)
            if (const int fd = connect_and_send(p, k % 2 ? junk(8) : ""); fd >= 0)
                held.push_back(fd);
    }
    EXPECT_EQ(held.size(), ports.size() * 20);
    for (int round = 0; round < 3; ++round)
        expect_ranks_sum(ranks);
    for (int fd : held)
        ::close(fd);
    expect_ranks_sum(ranks);
}

}  // namespace
}  // namespace crucible::engine
