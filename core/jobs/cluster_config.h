#pragma once
// agent.json "cluster": the other agents this one runs jobs with (a run over several servers,
// DESIGN.md "Distributed training"), and where its own ranks meet theirs.
//
//   "cluster": {
//     "host": "10.0.0.1",              the address the peers reach this server at
//     "ports": [29400, 29499],         the rendezvous stores this agent serves
//     "peers": [{"name": "b", "url": "https://10.0.0.2:7443", "token": "crt_...",
//                "fingerprint": "AB:CD:..."}]
//   }
//
// Trust goes both ways: an agent starts ranks on a peer with the token that peer gave it, and a
// peer accepts a share of a run only from a token of its own and only when the store it is
// told to meet is at the address of one of its own peers.
#include <optional>
#include <string>
#include <vector>

#include "core/base/json.h"
#include "core/net/api_client.h"

namespace crucible::jobs {

struct PeerAgent {
    std::string name;
    net::RemoteEndpoint endpoint;
};

struct ClusterConfig {
    std::string host;
    int first_port = 29400, last_port = 29499;
    std::vector<PeerAgent> peers;

    // InputError naming `where` and the field for anything missing, malformed or repeated.
    static ClusterConfig from_json(const Json& json, const std::string& where);
    const PeerAgent* find(const std::string& name) const;
    // The peer whose URL names `host` (the store of a share it sends), or nullptr.
    const PeerAgent* peer_at(const std::string& address) const;
};

}  // namespace crucible::jobs
