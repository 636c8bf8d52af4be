#pragma once
// agent.json "cluster": the other agents this one runs jobs with (a run over several servers,
// DESIGN.md "Distributed training"), and where its own ranks meet theirs.
//
//   "cluster": {
//     "host": "10.0.0.1",              the address the peers reach this server at
//     "ports": [29400, 29499],         the rendezvous stores this agent serves
//     "peers": [{"name": "b", "url": "https://10.0.0.2:7443", "fingerprint": "AB:CD:..."}]
//   }
//
// Each peer's token (the one that peer made for this agent) lives in the agent's secret store
// (agent_secrets.h), put there by `crucible agent peer add`; a "token" in the entry itself is
// still read, as agents before the secret store kept it, and the agent warns about it.
//
// Trust goes both ways: an agent starts ranks on a peer with the token that peer gave it, and a
// peer accepts a share of a run only from a token of its own and only when the store it is
// told to meet is at the address of one of its own peers.
#include <optional>
#include <string>
#include <vector>

#include "core/base/json.h"
#include "core/net/api_client.h"

namespace crucible {
class SecretStore;
}

namespace crucible::jobs {

struct PeerAgent {
    std::string name;
    net::RemoteEndpoint endpoint;
    bool token_in_file = false;  // agent.json holds the token in the clear
};

struct ClusterConfig {
    std::string host;
    int first_port = 29400, last_port = 29499;
    std::vector<PeerAgent> peers;

    // InputError naming `where` and the field for anything missing, malformed or repeated.
    static ClusterConfig from_json(const Json& json, const std::string& where);
    // The peers' tokens from the agent's secret store (those agent.json does not hold);
    // InputError naming `where` and the peer for one that has none.
    void take_tokens(const SecretStore& secrets, const std::string& where);
    const PeerAgent* find(const std::string& name) const;
    // The peer whose URL names `host` (the store of a share it sends), or nullptr.
    const PeerAgent* peer_at(const std::string& address) const;
};

}  // namespace crucible::jobs
