#include "core/jobs/server_mesh.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/tcp_listeners.h"

namespace crucible::jobs {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(50);

}  // namespace

ServerMesh::ServerMesh(const ServerShare& share, int local_ranks, int store_port)
    : share_(share), local_ranks_(local_ranks), store_port_(store_port) {
    if (share_.first_rank == 0) {
        gate_.emplace(share_.store_host, share_.store_port, store_port_, share_.key,
                      share_.world_size);
        return;
    }
    if (share_.gate_port <= 0 || share_.host.empty())
        throw Error(
            "this server's share of the run names no gate (host and gate_port): the "
            "agent that took it is older than the first server's");
    store_relay_.emplace(share_.store_host, share_.store_port, share_.key);
    store_port_ = store_relay_->port();
    gate_.emplace(share_.host, share_.gate_port, 0, share_.key);
}

ServerMesh::~ServerMesh() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
}

std::string ServerMesh::rank_address(int rank) const {
    return mesh_rank_address(share_.key, rank);
}

void ServerMesh::start(const std::filesystem::path& ready) {
    thread_ = std::thread([this, ready] {
        try {
            connect_ranks(ready);
        } catch (const std::exception& e) {
            std::lock_guard lock(mutex_);
            error_ = e.what();
        }
    });
}

std::optional<std::string> ServerMesh::error() const {
    std::lock_guard lock(mutex_);
    return error_;
}

int ServerMesh::proxies() const {
    return proxy_count_;
}

void ServerMesh::connect_ranks(const std::filesystem::path& ready) {
    const auto stopped = [this] { return stop_.load(); };
    const bool first_server = share_.first_rank == 0;
    const std::string gate_host = first_server ? share_.store_host : share_.host;
    const int gate_port = first_server ? share_.store_port : share_.gate_port;
    // Each rank binds Gloo's listener on its own loopback address before it connects; the
    // system picks the port, which only its table tells.
    std::vector<MeshRank> ours;
    for (int k = 0; k < local_ranks_; ++k) {
        MeshRank r;
        r.rank = share_.first_rank + k;
        r.address = rank_address(r.rank);
        r.gate_host = gate_host;
        r.gate_port = gate_port;
        while (true) {
            if (stopped()) return;
            if (const auto port = listening_tcp_port(r.address)) {
                r.port = *port;
                break;
            }
            std::this_thread::sleep_for(kPollInterval);
        }
        ours.push_back(std::move(r));
    }
    gate_->set_local_ranks(ours);
    const std::vector<MeshRank> table =
        first_server ? gate_->mesh_table(stopped)
                     : exchange_mesh_table(share_.store_host, share_.store_port, share_.key,
                                           share_.world_size, ours, stopped);
    for (const MeshRank& r : table) {
        if (r.rank >= share_.first_rank && r.rank < share_.first_rank + local_ranks_) continue;
        // Another agent on this very machine (tests, a server split between two agents): its
        // rank already listens at that address, and this server's ranks reach it directly.
        if (listening_tcp_port(r.address) == r.port) continue;
        proxies_.push_back(std::make_unique<RendezvousRelay>(r.address, r.port, r.gate_host,
                                                             r.gate_port, share_.key,
                                                             "rank " + std::to_string(r.rank)));
        ++proxy_count_;
    }
    write_file_atomically(ready, "ready\n");
    const int proxies = proxy_count_;
    spdlog::info("ranks {}..{} of {}: the other servers' ranks reached through {} {}",
                 share_.first_rank, share_.first_rank + local_ranks_ - 1, share_.world_size,
                 proxies, proxies == 1 ? "proxy" : "proxies");
}

}  // namespace crucible::jobs
