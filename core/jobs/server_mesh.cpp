#include "core/jobs/server_mesh.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/tcp_listeners.h"
#include "core/jobs/rank_launcher.h"

namespace crucible::jobs {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(50);

}  // namespace

ServerMesh::ServerMesh(const ServerShare& share, int local_ranks, std::filesystem::path ready)
    : share_(share), local_ranks_(local_ranks), ready_(std::move(ready)) {
    if (share_.gate_port <= 0 || share_.host.empty())
        throw Error(
            "this server's share of the run names no gate (host and gate_port): the "
            "agent that made or took it is older than this one");
    const bool first_server = share_.first_rank == 0;
    if (first_server) {
        store_port_ = free_tcp_port("127.0.0.1");
    } else {
        store_relay_.emplace(share_.store_host, share_.store_port, share_.key);
        store_port_ = store_relay_->port();
    }
    // Rank 0's server: the same gate lets the other servers' ranks reach the store.
    gate_.emplace(share_.host, share_.gate_port, first_server ? store_port_ : 0, share_.key,
                  share_.world_size);
    std::error_code ignored;
    std::filesystem::remove(ready_, ignored);
}

ServerMesh::~ServerMesh() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
}

std::string ServerMesh::rank_address(int rank) const {
    return mesh_rank_address(share_.key, rank);
}

void ServerMesh::start() {
    thread_ = std::thread([this] {
        try {
            connect_ranks();
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
    std::lock_guard lock(mutex_);
    return static_cast<int>(proxies_.size());
}

std::vector<MeshRank> ServerMesh::find_local_ranks() const {
    std::vector<MeshRank> ranks;
    for (int k = 0; k < local_ranks_; ++k)
        ranks.push_back({share_.first_rank + k, rank_address(share_.first_rank + k), 0, share_.host,
                         share_.gate_port});
    // Each rank binds Gloo's listener on its own loopback address before it connects; the
    // system picks the port, which only its table tells. One read of the table per look.
    for (std::size_t found = 0; found < ranks.size();) {
        if (stop_) return {};
        const std::vector<TcpListener> listeners = tcp_listeners();
        for (MeshRank& r : ranks)
            if (r.port == 0)
                if (const auto port = listening_tcp_port(listeners, r.address)) {
                    r.port = *port;
                    ++found;
                }
        if (found < ranks.size()) std::this_thread::sleep_for(kPollInterval);
    }
    return ranks;
}

void ServerMesh::connect_ranks() {
    const std::vector<MeshRank> ours = find_local_ranks();
    if (ours.empty()) return;  // stopped
    gate_->set_local_ranks(ours);
    const auto stopped = [this] { return stop_.load(); };
    const std::vector<MeshRank> table =
        share_.first_rank == 0 ? gate_->mesh_table(stopped)
                               : exchange_mesh_table(share_.store_host, share_.store_port,
                                                     share_.key, share_.world_size, ours, stopped);
    const std::vector<TcpListener> listeners = tcp_listeners();
    int opened = 0;
    for (const MeshRank& r : table) {
        if (r.rank >= share_.first_rank && r.rank < share_.first_rank + local_ranks_) continue;
        // Another agent on this very machine (tests, a server split between two agents): its
        // rank already listens at that address, and this server's ranks reach it directly.
        if (listening_tcp_port(listeners, r.address) == r.port) continue;
        auto proxy =
            std::make_unique<RendezvousRelay>(r.address, r.port, r.gate_host, r.gate_port,
                                              share_.key, "rank " + std::to_string(r.rank));
        std::lock_guard lock(mutex_);
        proxies_.push_back(std::move(proxy));
        ++opened;
    }
    write_file_atomically(ready_, "ready\n");
    spdlog::info("ranks {}..{} of {}: the other servers' ranks reached through {} {}",
                 share_.first_rank, share_.first_rank + local_ranks_ - 1, share_.world_size, opened,
                 opened == 1 ? "proxy" : "proxies");
}

}  // namespace crucible::jobs
