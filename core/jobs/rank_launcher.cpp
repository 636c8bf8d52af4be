#include "core/jobs/rank_launcher.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdio>
#include <deque>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include "core/base/child_process.h"
#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/gpu_ref.h"
#include "core/base/job_control.h"
#include "core/base/job_state.h"
#include "core/base/worker_arguments.h"
#include "core/jobs/server_mesh.h"

namespace crucible::jobs {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(50);
constexpr const char* kLoopback = "127.0.0.1";
constexpr std::size_t kLogTailLines = 20;

std::vector<std::string> last_lines(const std::filesystem::path& file, std::size_t count) {
    std::ifstream in(file, std::ios::binary);
    std::deque<std::string> lines;
    std::string line;
    while (std::getline(in, line)) {
        lines.push_back(line);
        if (lines.size() > count) lines.pop_front();
    }
    return {lines.begin(), lines.end()};
}

// The last error a rank logged, without its time stamp.
std::optional<std::string> last_error_line(const std::vector<std::string>& tail) {
    for (auto it = tail.rbegin(); it != tail.rend(); ++it) {
        const auto at = it->find(" error ");
        if (at != std::string::npos) return it->substr(at + 7);
    }
    return std::nullopt;
}

// An error that says a peer vanished (Gloo's broken or timed-out connections, a rendezvous
// that did not complete) rather than what went wrong on the rank itself.
bool peer_failure(const std::string& error) {
    for (const char* sign : {"Connection closed", "Connection reset", "Broken pipe", "Timed out",
                             "timed out", "gloo/transport", "could not meet the others"})
        if (error.find(sign) != std::string::npos) return true;
    return false;
}

// An exit that the ranks agree on among themselves (succeeded, paused, canceled,
// interrupted): every rank ends so at the same step. Anything else is one rank's failure.
bool coordinated_exit(const ExitInfo& exit) {
    if (exit.signal != 0) return false;
    const auto state = state_of_exit_code(exit.code);
    return state && *state != JobState::Failed;
}

struct RankProcess {
    std::unique_ptr<ChildProcess> child;
    std::optional<ExitInfo> exit;
    std::chrono::steady_clock::time_point ended;
};

}  // namespace

RankLaunch worker_rank_launch(const std::filesystem::path& program,
                              const std::filesystem::path& job_dir, bool resume, RankPlan plan) {
    RankLaunch launch;
    launch.program = program;
    launch.args = worker_job_arguments(job_dir, resume);
    launch.job = JobFolder{job_dir};
    launch.plan = std::move(plan);
    // GPU indices are NVML's (gpu_ref.h): CUDA must number the GPUs the same way.
    launch.env[kCudaDeviceOrderVariable] = kCudaDeviceOrderPciBus;
    // NCCL's bootstrap and socket transport listen on the machine's first network interface
    // unless told otherwise. A run on one server keeps them on loopback, as its store and Gloo
    // are; an administrator's own choice in the environment stands.
    if (!launch.plan.share && !nonempty_environment_variable(kNcclSocketInterfaceVariable))
        launch.env[kNcclSocketInterfaceVariable] = kNcclLoopbackInterface;
    return launch;
}

std::function<int(const RankPlan&)> rank_launcher(std::filesystem::path program,
                                                  std::filesystem::path job_dir, bool resume,
                                                  std::function<bool()> stop_requested) {
    return [=](const RankPlan& plan) {
        RankLaunch launch = worker_rank_launch(program, job_dir, resume, plan);
        launch.stop_requested = stop_requested;
        const RankLaunchOutcome outcome = run_ranks(launch);
        if (!outcome.reason.empty()) std::fprintf(stderr, "%s\n", outcome.reason.c_str());
        return outcome.exit_code;
    };
}

int free_tcp_port(const std::string& host) {
    namespace asio = boost::asio;
    asio::io_context io;
    asio::ip::tcp::acceptor acceptor(io);
    const asio::ip::tcp::endpoint endpoint(asio::ip::make_address(host), 0);
    acceptor.open(endpoint.protocol());
    acceptor.bind(endpoint);
    return acceptor.local_endpoint().port();
}

bool tcp_port_free(const std::string& host, int port) {
    namespace asio = boost::asio;
    asio::io_context io;
    asio::ip::tcp::acceptor acceptor(io);
    const asio::ip::tcp::endpoint endpoint(asio::ip::make_address(host),
                                           static_cast<unsigned short>(port));
    boost::system::error_code ec;
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    return !ec;
}

RankLaunchOutcome run_ranks(const RankLaunch& launch) {
    const RankPlan& plan = launch.plan;
    const int local = plan.local_ranks();
    if (local < 1) throw Error("a distributed run needs at least one rank");
    const int first = plan.first_rank();
    RankAddress address;
    address.world_size = plan.world_size();
    // Every rank meets the store on its own server's loopback: rank 0 serves it there, and
    // across servers the gate and relays carry it to those who prove the run's key.
    address.store_host = kLoopback;
    // Across servers the launchers carry the store and the ranks' Gloo connections
    // (server_mesh.h); the ranks wait for the file that says their proxies are up.
    std::optional<ServerMesh> mesh;
    if (plan.share) {
        mesh.emplace(*plan.share, local, launch.job.mesh_ready());
        address.store_port = mesh->store_port();
        address.mesh_ready = path_to_utf8(launch.job.mesh_ready());
    } else {
        address.store_port = free_tcp_port(kLoopback);
    }
    address.launcher_pid = platform::process_id();
    address.launcher_token = process_start_token(address.launcher_pid);

    std::vector<RankProcess> ranks(static_cast<std::size_t>(local));
    const auto kill_all = [&ranks] {
        for (auto& r : ranks)
            if (r.child && !r.exit) r.child->kill();
        for (auto& r : ranks)
            if (r.child && !r.exit) r.exit = r.child->wait();
    };
    try {
        for (int k = 0; k < local; ++k) {
            address.rank = first + k;
            address.device = plan.devices[static_cast<std::size_t>(k)];
            if (mesh) address.host = mesh->rank_address(address.rank);
            ChildOptions co;
            co.program = launch.program;
            co.args = launch.args;
            for (auto& a : rank_arguments(address))
                co.args.push_back(std::move(a));
            co.env = launch.env;
            co.working_dir = launch.job.dir;
            // This server's first rank talks through the launcher's own output (worker.log
            // under the agent, the terminal under `crucible train`); the others write their
            // own logs.
            if (k > 0) co.log_file = launch.job.rank_log(first + k);
            ranks[static_cast<std::size_t>(k)].child = ChildProcess::start(co);
        }
    } catch (...) {
        kill_all();
        throw;
    }
    if (mesh) mesh->start();

    bool stop_forwarded = false;
    std::optional<std::chrono::steady_clock::time_point> kill_at;
    // When a cancel the ranks have not taken was first seen (none: min()).
    auto cancel_seen = std::chrono::steady_clock::time_point::min();
    std::vector<int> failures;                // ranks that failed on their own, in the order seen
    std::vector<int> stuck;                   // ranks still running when the grace ended (killed)
    std::optional<std::string> mesh_failure;  // why the ranks could not reach the other servers
    while (true) {
        bool running = false;
        for (int k = 0; k < local; ++k) {
            auto& r = ranks[static_cast<std::size_t>(k)];
            if (r.exit) continue;
            r.exit = r.child->poll();
            if (!r.exit) {
                running = true;
                continue;
            }
            r.ended = std::chrono::steady_clock::now();
            if (coordinated_exit(*r.exit)) {
                // Rank 0 ends last (it writes the artifacts); after it, a rank still running
                // is stuck and gets only the grace time.
                if (k == 0 && !kill_at) kill_at = std::chrono::steady_clock::now() + launch.grace;
                continue;
            }
            failures.push_back(k);
            if (!kill_at) kill_at = std::chrono::steady_clock::now() + launch.grace;
        }
        if (!running) break;
        if (mesh && !kill_at) mesh_failure = mesh->error();
        if (mesh_failure) {
            kill_all();
            break;
        }
        if (kill_at && std::chrono::steady_clock::now() >= *kill_at) {
            for (int k = 0; k < local; ++k)
                if (!ranks[static_cast<std::size_t>(k)].exit) stuck.push_back(k);
            kill_all();
            break;
        }
        // A cancel the ranks do not take (still meeting at the store, or stuck in a
        // collective) ends them after the grace: a canceled run has nothing left to save.
        if (!kill_at && peek_stop_request(launch.job) == StopRequest::Cancel) {
            const auto now = std::chrono::steady_clock::now();
            if (cancel_seen == std::chrono::steady_clock::time_point::min()) cancel_seen = now;
            if (now - cancel_seen >= launch.grace) {
                kill_all();
                clear_stop_request(launch.job);
                RankLaunchOutcome canceled;
                canceled.exit_code = worker_exit_code(JobState::Canceled);
                canceled.reason = "canceled; the ranks had not taken the request within " +
                                  std::to_string(launch.grace.count() / 1000) + " s and were ended";
                EventLogWriter(launch.job.events())
                    .append(make_status(job_state_name(JobState::Canceled), canceled.reason));
                return canceled;
            }
        } else {
            cancel_seen = std::chrono::steady_clock::time_point::min();
        }
        if (!stop_forwarded && launch.stop_requested && launch.stop_requested()) {
            write_stop_request(launch.job, StopRequest::Checkpoint);
            stop_forwarded = true;
        }
        std::this_thread::sleep_for(kPollInterval);
    }

    // The request was for these ranks; a later start of the job must not find it.
    if (stop_forwarded) clear_stop_request(launch.job);
    RankLaunchOutcome outcome;
    if (mesh_failure) {
        outcome.exit_code = worker_exit_code(JobState::Failed);
        outcome.reason = "ranks " + std::to_string(first) + ".." +
                         std::to_string(first + local - 1) +
                         " could not reach the other servers' ranks: " + *mesh_failure;
        EventLogWriter(launch.job.events())
            .append(make_status(job_state_name(JobState::Failed), outcome.reason));
        return outcome;
    }
    const ExitInfo& first_exit = *ranks[0].exit;
    const auto log_of = [&](int k) {
        return first + k == 0 ? launch.job.worker_log() : launch.job.rank_log(first + k);
    };
    // The blame goes to a rank that crashed or was killed, then to one that failed with an
    // error of its own (out of memory, bad data), before one that failed only because a peer
    // vanished from a collective; among equals, the first seen.
    int failed = -1, best = -1;
    for (int k : failures) {
        const ExitInfo& e = *ranks[static_cast<std::size_t>(k)].exit;
        const bool crashed = e.signal != 0 || !state_of_exit_code(e.code);
        const auto error = last_error_line(last_lines(log_of(k), kLogTailLines));
        const int score = crashed ? 2 : (error && !peer_failure(*error)) ? 1 : 0;
        if (score > best) {
            best = score;
            failed = k;
        }
    }
    if (failed < 0) {
        outcome.exit_code =
            first_exit.signal == 0 ? first_exit.code : worker_exit_code(JobState::Failed);
        // Rank 0 writes a run's final status; a share on another server has none, so its
        // launcher says how its ranks ended (with the run).
        if (first > 0)
            if (const auto state = state_of_exit_code(outcome.exit_code))
                EventLogWriter(launch.job.events())
                    .append(make_status(job_state_name(*state),
                                        "ranks " + std::to_string(first) + ".." +
                                            std::to_string(first + local - 1) +
                                            " ended with the run"));
        return outcome;
    }
    const ExitInfo& why = *ranks[static_cast<std::size_t>(failed)].exit;
    const std::string device = launch.plan.devices[static_cast<std::size_t>(failed)];
    outcome.exit_code = worker_exit_code(JobState::Failed);
    outcome.failed_rank = first + failed;
    outcome.reason = "rank " + std::to_string(first + failed) + " of " +
                     std::to_string(address.world_size) + " (device " +
                     (device.empty() ? std::string("auto") : device) +
                     (plan.share ? ", on this server" : "") + ") ended: " + why.describe();
    if (stuck.empty()) {
        outcome.reason += "; the other ranks stopped";
    } else {
        std::string names;
        for (int k : stuck)
            names += (names.empty() ? "" : ", ") + std::to_string(first + k);
        outcome.reason += "; rank(s) " + names + " did not end within " +
                          std::to_string(launch.grace.count() / 1000) + " s and were killed";
    }
    const auto tail = last_lines(log_of(failed), kLogTailLines);
    // The rank's own words, when it said why.
    if (const auto error = last_error_line(tail)) outcome.reason += "; its last error: " + *error;
    Event status = make_status(job_state_name(JobState::Failed), outcome.reason);
    status.fields["rank"] = first + failed;
    status.fields["device"] = device;
    status.fields["log_tail"] = Json(tail);
    EventLogWriter(launch.job.events()).append(std::move(status));
    return outcome;
}

}  // namespace crucible::jobs
