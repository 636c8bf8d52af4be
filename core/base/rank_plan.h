#pragma once
// Data-parallel runs (one worker process per device, DESIGN.md "Distributed training"): how the
// `device` and `ranks` options become a list of ranks, and how a launcher tells one rank who it
// is. No LibTorch here: the launcher (core/jobs, the CLI) and the engine both read this.
//
//   device=0,1,2,3        four ranks, one per GPU (the yolo habit); ranks may be 1 or 4
//   device=cpu ranks=2    two CPU ranks (tests, CPU servers)
//   device=0              one rank; ranks>1 on one device is refused
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/base/json.h"

namespace crucible {

// This server's share of a run over several servers (spec.json "world", written by the agents:
// DESIGN.md "Distributed training"). Its ranks are first_rank .. first_rank + local - 1 of
// world_size; the server whose share starts at rank 0 serves the rendezvous store.
struct ServerShare {
    int first_rank = 0;
    int world_size = 1;
    std::string store_host;  // the store's address, as every server reaches it
    int store_port = 0;
    // The address the other servers reach this server's launcher at: its gate listens there on
    // gate_port (core/jobs/rendezvous_tunnel.h).
    std::string host;
    // This server's gate's port, from its own agent.json cluster ports: set by the agent that
    // runs the share (the store's port on the first server); 0 until then.
    int gate_port = 0;
    // The run's rendezvous key, kShareKeyHexDigits lower-case hex digits: the launchers of the
    // servers prove to each other that they hold it before the store's bytes pass
    // (core/jobs/rendezvous_tunnel.h). Never on a command line or in an API answer.
    std::string key;
    // The Gloo transport of the server that planned the run (kGlooTransport there); empty: an
    // agent from before this field, not checked.
    std::string gloo_transport;

    Json to_json() const;
    // InputError naming `where` and the field for anything missing or out of range.
    static ServerShare from_json(const Json& json, const std::string& where);
};

inline constexpr std::size_t kShareKeyHexDigits = 64;  // 32 random bytes

// How this platform's LibTorch carries Gloo's messages between ranks. LibTorch for Windows
// builds Gloo on libuv ("uv"); the Linux wheel has only Gloo's own TCP transport ("tcp"),
// whose listener and message headers differ (48-byte against 32-byte headers), so ranks of
// the two cannot form one run. Agents compare it before they start a share's ranks.
#ifdef _WIN32
inline constexpr const char* kGlooTransport = "uv";
#else
inline constexpr const char* kGlooTransport = "tcp";
#endif

// HOST:PORT, as the store's and the gates' addresses are written (the host not empty, the
// port 1..65535); InputError naming `where` for anything else.
struct HostPort {
    std::string host;
    int port = 0;
};
HostPort parse_host_port(const std::string& where, const std::string& text);

// The field of spec.json that holds a ServerShare.
inline constexpr const char* kSpecServerShare = "world";

struct RankPlan {
    std::vector<std::string> devices;  // the device text of each of this machine's ranks
    std::optional<ServerShare> share;  // set when other servers hold ranks of the run too
    int local_ranks() const { return static_cast<int>(devices.size()); }
    int first_rank() const { return share ? share->first_rank : 0; }
    int world_size() const { return share ? share->world_size : local_ranks(); }
    bool distributed() const { return world_size() > 1; }
};

// Throws InputError("device" / "ranks", ...) for a list with an empty entry, a repeated GPU,
// ranks < 1, or ranks that do not match the GPUs listed.
RankPlan plan_ranks(const std::string& device, int ranks);

// The positions of the global batch [begin, end) that rank `rank` of `world_size` trains on:
// even slices in rank order (sizes differ by one at most; a short last batch may leave a rank
// none). Every loader of every task slices with this.
struct ShardRange {
    std::int64_t begin = 0, end = 0;
};
ShardRange shard_range(std::int64_t begin, std::int64_t end, int rank, int world_size);

// Who one rank is: passed on the worker's command line by the launcher.
struct RankAddress {
    int rank = 0;
    int world_size = 1;
    std::string store_host = "127.0.0.1";  // rank 0 serves the rendezvous store here
    int store_port = 0;
    std::string device;  // this rank's device, as plan_ranks gave it
    // The launcher that watches the ranks (process_info.h): a rank whose launcher is gone
    // checkpoints and stops, so none trains on headless. 0: none.
    long launcher_pid = 0;
    std::string launcher_token;  // its process_start_token
    std::string host;  // the address Gloo binds ("" = loopback; a run over several servers: the
                       // rank's own loopback address, mesh_rank_address)
    // A run over several servers: the file whose existence says that the launcher has made every
    // other server's ranks reachable (its proxies are up); the rank waits for it before Gloo
    // connects. Empty: no wait.
    std::string mesh_ready;
    // Not an argument: whether this rank takes the job folder's stop requests (the first rank
    // on each server; engine::run_job decides). The others hear them through a collective.
    bool reads_job_folder = true;
};

// The worker arguments that carry `address` (the one place that spells them).
std::vector<std::string> rank_arguments(const RankAddress& address);
// Reads `args[i]` (and its value) when it is one of rank_arguments' flags: true and i advanced
// past the value. Throws InputError naming the flag for a missing or malformed value.
bool take_rank_argument(const std::vector<std::string>& args, std::size_t& i, RankAddress& address);
// Throws InputError when the address read from the arguments is inconsistent (rank outside the
// world, no port for a distributed rank).
void check_rank_address(const RankAddress& address);

}  // namespace crucible
