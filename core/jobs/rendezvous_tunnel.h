#pragma once
// The rendezvous of a run over several servers, closed to strangers (DESIGN.md "Distributed
// training"). Rank 0 serves c10d's store on loopback only, so nobody off its server reaches it
// directly. The other servers' ranks reach it through two launchers:
//
//   rank 5 on b --> b 127.0.0.1:R [relay] ==proof of the key==> a HOST:P [gate] --> a 127.0.0.1:S
//                                                                                    (the store)
//
// The gate listens on the cluster address and port agent.json names; it hands a connection on
// to the store only once the far side has proved that it holds the run's key (ServerShare::key,
// sent by one agent to the other over their authenticated API). The relay listens on its own
// server's loopback for that server's ranks and does the same in reverse, so it never talks to a
// stranger's gate either. The proof, each side with a fresh challenge of 32 random bytes:
//
//   gate  -> relay   greeting, gate challenge
//   relay -> gate    relay challenge, HMAC-SHA256(key, "relay" gate challenge relay challenge)
//   gate  -> relay   HMAC-SHA256(key, "gate" gate challenge relay challenge)
//
// A connection that does not prove the key within 10 s is closed without a byte of the store's.
// After the proof the store's bytes pass in the clear: they carry the ranks' addresses, no
// secret (Gloo's own connections between ranks are not behind the gate: see the README).
#include <memory>
#include <string>

namespace crucible::jobs {

class RendezvousGate {
  public:
    // Listens on host:port at once; throws Error naming the address if it cannot. Passes proved
    // connections on to 127.0.0.1:store_port, waiting up to 5 minutes for the store to open.
    RendezvousGate(const std::string& host, int port, int store_port, const std::string& key);
    ~RendezvousGate();  // stops listening and closes every connection
    RendezvousGate(const RendezvousGate&) = delete;
    RendezvousGate& operator=(const RendezvousGate&) = delete;

    int refused() const;  // connections closed for a missing or wrong proof
    int passed() const;   // connections handed on to the store

  private:
    struct State;
    std::unique_ptr<State> state_;
};

class RendezvousRelay {
  public:
    // Listens on a free port of 127.0.0.1 for this server's ranks and carries each of their
    // connections to the gate at gate_host:gate_port (retrying up to 5 minutes while the gate is
    // not up yet). A gate that fails the proof gets nothing; the rank's connection is closed
    // and the launcher's log says why.
    RendezvousRelay(const std::string& gate_host, int gate_port, const std::string& key);
    ~RendezvousRelay();
    RendezvousRelay(const RendezvousRelay&) = delete;
    RendezvousRelay& operator=(const RendezvousRelay&) = delete;

    int port() const;     // where this server's ranks meet the store
    int refused() const;  // gates that failed the proof
    int passed() const;   // connections carried to the gate

  private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace crucible::jobs
