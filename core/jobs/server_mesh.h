#pragma once
// A launcher's part of a run over several servers (DESIGN.md "Distributed training"): the gate
// of this server, the relay to rank 0's store, and the proxies through which this server's ranks
// reach the other servers' Gloo listeners (rendezvous_tunnel.h). Nothing of a rank listens on a
// network address; only the gate does, and it opens to the run's key alone.
#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/base/rank_plan.h"
#include "core/jobs/rendezvous_tunnel.h"

namespace crucible::jobs {

class ServerMesh {
  public:
    // Opens this server's gate at share.host:share.gate_port at once (Error naming the address
    // if it cannot) and, off rank 0's server, the relay to the store; removes an earlier start's
    // `ready` file (the ranks wait for it).
    ServerMesh(const ServerShare& share, int local_ranks, std::filesystem::path ready);
    ~ServerMesh();  // stops the work of start() and closes everything
    ServerMesh(const ServerMesh&) = delete;
    ServerMesh& operator=(const ServerMesh&) = delete;

    // The store as this server's ranks reach it: 127.0.0.1 and this port (rank 0's server: a
    // free port, where rank 0 serves it).
    int store_port() const { return store_port_; }
    // The loopback address rank `rank` binds Gloo to (mesh_rank_address).
    std::string rank_address(int rank) const;

    // On a thread of its own, once the ranks are started: finds this server's ranks' Gloo ports,
    // trades them with the other servers for the whole table, opens a proxy for every rank of
    // the others and writes the `ready` file. Whatever fails goes to error().
    void start();
    // Why the work of start() failed; nullopt while it goes on or when it succeeded.
    std::optional<std::string> error() const;
    // Proxies opened by start() (ranks on this machine under another agent need none).
    int proxies() const;

  private:
    void connect_ranks();
    // This server's ranks with the ports their Gloo listeners took (waits until every one has
    // bound; empty when stopped first).
    std::vector<MeshRank> find_local_ranks() const;

    ServerShare share_;
    int local_ranks_;
    std::filesystem::path ready_;
    int store_port_ = 0;
    std::optional<RendezvousGate> gate_;
    std::optional<RendezvousRelay> store_relay_;
    std::atomic<bool> stop_{false};
    mutable std::mutex mutex_;  // guards proxies_ and error_
    std::vector<std::unique_ptr<RendezvousRelay>> proxies_;
    std::optional<std::string> error_;
    std::thread thread_;
};

}  // namespace crucible::jobs
