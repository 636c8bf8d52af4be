#pragma once
// The rendezvous and the collectives of a run over several servers, closed to strangers
// (DESIGN.md "Distributed training"). No rank listens on a network address: rank 0 serves c10d's
// store on loopback, and each rank's Gloo listener is on a loopback address of its own
// (mesh_rank_address). What crosses between servers goes through the launchers:
//
//   rank 5 on b --> b 127.0.0.1:R [relay] ====proof, "store"====> a HOST:P [gate] --> the store
//   rank 5 on b --> b 127.N.0.2:G [proxy] ==proof, "rank 1"===> a HOST:P [gate] --> rank 1's Gloo
//                                                                                 at 127.N.0.2:G
//
// Each server's launcher runs a gate on the cluster address and a port of agent.json's range; it
// hands a connection on only once the far side has proved that it holds the run's key
// (ServerShare::key, sent by one agent to the other over their authenticated API), and only to
// the store (on rank 0's server) or to a Gloo listener of one of its own ranks. A relay or a
// proxy listens on its own server's loopback for that server's ranks and does the same in
// reverse, so it never talks to a stranger's gate either. The proof, each side with a fresh
// challenge of 32 random bytes:
//
//   gate  -> relay   greeting, gate challenge
//   relay -> gate    relay challenge, HMAC-SHA256(key, "relay" gate challenge relay challenge)
//   gate  -> relay   HMAC-SHA256(key, "gate" gate challenge relay challenge)
//   relay -> gate    the request: 4-byte big-endian length, then "store", "rank K" or
//                    "mesh JSON" (a server's Gloo listeners, for the table: below)
//   gate  -> relay   the answer: '+' or '-', 4-byte big-endian length, then the text ("ok",
//                    the table, or why not)
//
// A connection that does not prove the key within 10 s is closed without a byte of the store's.
// After "+" the bytes pass in the clear: the store's carry the ranks' addresses, Gloo's the
// gradients. Nobody without the key opens a connection to either, but whoever sits on the path
// between two servers can read and alter what passes (see the README).
//
// The table: a Gloo rank connects to the address another rank's listener has, which the system
// picks when Gloo binds. Each launcher finds its ranks' ports (listening_tcp_port) and sends them
// with its gate's address to rank 0's gate ("mesh"); once every rank of the world is in, each
// gets the whole table back and opens a proxy on its loopback for every rank of the others.
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace crucible::jobs {

// Where one rank's Gloo listener is, and the gate of its server.
struct MeshRank {
    int rank = 0;
    std::string address;  // its loopback address (mesh_rank_address)
    int port = 0;
    std::string gate_host;
    int gate_port = 0;
};

// The loopback address rank `rank` binds Gloo to in the run with rendezvous key `key`:
// 127.N.H.L with N (1..254) from the key, so runs on one server rarely meet, and H.L = rank + 1.
std::string mesh_rank_address(const std::string& key, int rank);

// Polls `stop` while it waits; true stops the wait with an Error.
using StopCheck = std::function<bool()>;

class RendezvousGate {
  public:
    // Listens on host:port at once; throws Error naming the address if it cannot. store_port
    // > 0 (rank 0's server): passes proved "store" requests on to 127.0.0.1:store_port, waiting
    // up to 5 minutes for the store to open, and collects the table of a world of world_size
    // ranks. store_port 0: this server serves neither.
    RendezvousGate(const std::string& host, int port, int store_port, const std::string& key,
                   int world_size = 0);
    ~RendezvousGate();  // stops listening and closes every connection
    RendezvousGate(const RendezvousGate&) = delete;
    RendezvousGate& operator=(const RendezvousGate&) = delete;

    // This server's ranks: proved "rank K" requests for one of them reach its listener. On rank
    // 0's server they also go into the table.
    void set_local_ranks(const std::vector<MeshRank>& ranks);
    // Rank 0's server: the whole table once every server has sent its ranks (in rank order).
    // Throws Error when `stop` says so first.
    std::vector<MeshRank> mesh_table(const StopCheck& stop);

    int refused() const;  // connections closed for a missing or wrong proof or request
    int passed() const;   // connections handed on to the store or a rank

  private:
    struct State;
    std::unique_ptr<State> state_;
};

class RendezvousRelay {
  public:
    // Listens on a free port of 127.0.0.1 for this server's ranks and carries each of their
    // connections to the gate at gate_host:gate_port (retrying up to 5 minutes while the gate is
    // not up yet) with request `request` ("store", "rank K"). A gate that fails the proof or
    // refuses the request gets nothing; the rank's connection is closed and the launcher's log
    // says why.
    RendezvousRelay(const std::string& gate_host, int gate_port, const std::string& key,
                    const std::string& request = "store");
    // The same on a given loopback address and port: a proxy for another server's rank, where
    // this server's ranks look for it.
    RendezvousRelay(const std::string& listen_address, int listen_port,
                    const std::string& gate_host, int gate_port, const std::string& key,
                    const std::string& request);
    ~RendezvousRelay();
    RendezvousRelay(const RendezvousRelay&) = delete;
    RendezvousRelay& operator=(const RendezvousRelay&) = delete;

    int port() const;     // where this server's ranks meet it
    int refused() const;  // gates that failed the proof or refused the request
    int passed() const;   // connections carried to the gate

  private:
    struct State;
    std::unique_ptr<State> state_;
};

// A server other than rank 0's: sends its ranks to rank 0's gate and returns the whole table
// (rank order) once every server's ranks are in. Retries while the gate is not up; throws Error
// when the gate refuses, or when `stop` says so first.
std::vector<MeshRank> exchange_mesh_table(const std::string& gate_host, int gate_port,
                                          const std::string& key, int world_size,
                                          const std::vector<MeshRank>& ours, const StopCheck& stop);

}  // namespace crucible::jobs
