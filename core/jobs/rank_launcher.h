#pragma once
// Starts and watches the worker processes of a data-parallel run, one per rank (DESIGN.md
// "Distributed training"). `crucible-worker --job DIR` becomes this launcher when the job asks
// for several ranks, so the agent and `crucible train` start such a job as any other.
//
// Rank 0 serves the rendezvous store on a free port of this machine's loopback; each rank is
// told its rank, the world size, the store and its device on the command line (rank_plan.h).
// For a share of a run over several servers, the launcher also runs the store's gate (on rank
// 0's server) or a relay to it (rendezvous_tunnel.h), which only the run's key opens. When a rank
// fails (crash, kill, out of memory, error), the others get `grace` to end on their own (they
// see the broken collective) and are then killed; the job's last status event names the rank,
// its device and its last log lines. No rank outlives the launcher's return.
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/base/job_folder.h"
#include "core/base/rank_plan.h"

namespace crucible::jobs {

struct RankLaunch {
    std::filesystem::path program;  // crucible-worker (or a test's worker)
    std::vector<std::string> args;  // before the rank arguments: --job DIR [--resume]
    JobFolder job;
    RankPlan plan;
    std::map<std::string, std::string> env;
    std::chrono::milliseconds grace{10000};
    // Polled while the ranks run; true once asks every rank to checkpoint and stop (the
    // launcher's own SIGTERM or service stop), through the job folder's stop request.
    std::function<bool()> stop_requested;
};

struct RankLaunchOutcome {
    int exit_code = 1;  // the worker exit code of the run (job_state.h)
    int failed_rank = -1;
    std::string reason;  // empty when every rank ended as rank 0 did
};

RankLaunchOutcome run_ranks(const RankLaunch& launch);

// NCCL's choice of network interface for its bootstrap and sockets, and loopback's name.
inline constexpr const char* kNcclSocketInterfaceVariable = "NCCL_SOCKET_IFNAME";
inline constexpr const char* kNcclLoopbackInterface = "lo";

// The launch of the ranks of the job in `job_dir`, each running `program` with
// worker_job_arguments and its rank's arguments; a run on one server gets NCCL on loopback
// (unless NCCL_SOCKET_IFNAME is set).
RankLaunch worker_rank_launch(const std::filesystem::path& program,
                              const std::filesystem::path& job_dir, bool resume, RankPlan plan);

// What a worker program gives engine::run_job as JobOptions::launch_ranks: runs the plan's ranks
// of `job_dir` with `program` (itself, or crucible-worker beside the CLI), asks them to
// checkpoint once `stop_requested` says so, prints why a failed run failed on stderr, and
// returns the run's exit code.
std::function<int(const RankPlan&)> rank_launcher(std::filesystem::path program,
                                                  std::filesystem::path job_dir, bool resume,
                                                  std::function<bool()> stop_requested);

// A TCP port nobody listens on at `host` now (bound and released: another program may take it
// before the store does, which then fails its rendezvous with a clear message).
int free_tcp_port(const std::string& host);
// Whether `port` at `host` can be bound now (nobody listens on it).
bool tcp_port_free(const std::string& host, int port);

}  // namespace crucible::jobs
