#pragma once
// Runs over several servers (DESIGN.md "Distributed training"), on the agent a person submits
// to: it serves the run's rendezvous store and holds ranks 0..; each server named in the
// request's `servers` (a peer in agent.json "cluster") runs the next ranks as a job of its own,
// its "share". This class plans the world at submit, sends each peer its share (the job's
// inputs uploaded there first), and ties the jobs' fates together: a share that fails or is
// canceled cancels the run here, and a run that ends here cancels the shares still running.
//
//   person --submit (servers=[b])--> agent a: job J, ranks 0..n-1, store on a's port P
//                                      | uploads J's inputs, submits J's share to b
//                                      v
//                                    agent b: job K, ranks n..W-1, meets a's store at a:P
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/base/rank_plan.h"
#include "core/jobs/cluster_config.h"
#include "core/jobs/job_registry.h"
#include "core/jobs/scheduler.h"
#include "core/net/api_types.h"

namespace crucible::jobs {

// The world of a run over several servers, as planned at submit.
struct ClusterPlan {
    ServerShare local;                // this server's: ranks 0.., it serves the store
    std::vector<ServerShare> shares;  // the peers', in the request's order of `servers`
};

class ClusterRuns {
  public:
    ClusterRuns(ClusterConfig config, JobRegistry& registry, Scheduler& scheduler,
                std::string agent_name);
    ~ClusterRuns();

    void start();
    void stop();

    // InputError("servers", ...) naming a server that is not a peer, or when this agent has no
    // "cluster.host" (none named: nothing to check).
    void check_servers(const std::vector<net::ServerRanks>& servers) const;
    // For a job (its options resolved, its GPUs planned) whose request names `servers`: the
    // ranks of each server and a store port from agent.json's range.
    // Throws InputError("servers", ...) naming an unknown peer, a missing "cluster.host" or a
    // range with no free port.
    ClusterPlan plan(const net::JobInfo& job, const std::vector<net::ServerRanks>& servers);
    // For a share a peer sends: InputError("share", ...) unless its store is at the address of
    // one of this agent's peers, or when agent.json's range has no free port. Sets the share's
    // host and gate port (where this server's launcher opens its gate to the run's other
    // servers), held until hold_port() names the job and the job ends.
    void accept_share(ServerShare& share);
    // Names the job that holds a port of the range (a share's gate): freed when it ends.
    void hold_port(int port, const std::string& job_id);
    // Gives back a port taken for a job that was not made after all.
    void release_port(int port);
    // The scheduler's start gate: false for an interrupted run over several servers or share of
    // one, which ends instead of resuming (only rank 0's server keeps checkpoints).
    static bool may_start(const net::JobInfo& job);
    // After the job is registered: sends each peer its share (on this object's thread).
    void launch(const net::JobInfo& job, const ClusterPlan& plan,
                const std::vector<net::ServerRanks>& servers, const Json& task_schema);

  private:
    struct Launch {
        net::JobInfo job;
        ClusterPlan plan;
        std::vector<net::ServerRanks> servers;
        Json task_schema;
    };
    // A free port of agent.json's cluster range, held (InputError naming `field` when none).
    int take_port(const std::string& field);
    void loop();
    void send_shares(const Launch& launch);
    // One look at every run with shares: ends the run when a share failed, and the shares
    // when the run ended.
    void watch();
    // Cancels the job here, saying why in its events.
    void end_run(const std::string& id, const std::string& why);

    ClusterConfig config_;
    JobRegistry& registry_;
    Scheduler& scheduler_;
    std::string agent_name_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Launch> launches_;
    std::map<int, std::string> ports_;  // store ports handed out, by the job they serve
    bool running_ = false;
    std::thread thread_;
};

}  // namespace crucible::jobs
