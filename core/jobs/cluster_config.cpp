#include "core/jobs/cluster_config.h"

#include "core/base/error.h"
#include "core/base/secret_store.h"
#include "core/jobs/agent_secrets.h"

namespace crucible::jobs {

ClusterConfig ClusterConfig::from_json(const Json& json, const std::string& where) {
    if (!json.is_object()) throw InputError(where, "expected an object");
    ClusterConfig c;
    if (json.contains("host")) c.host = get_string(json, "host", where);
    if (json.contains("ports")) {
        const Json& p = json["ports"];
        if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() ||
            !p[1].is_number_integer())
            throw InputError(where, "field 'ports': expected [first, last], two port numbers");
        const long long first = p[0].get<long long>(), last = p[1].get<long long>();
        if (first < 1024 || last > 65535 || first > last)
            throw InputError(where, "field 'ports': expected 1024 <= first <= last <= 65535");
        c.first_port = static_cast<int>(first);
        c.last_port = static_cast<int>(last);
    }
    if (json.contains("peers")) {
        const Json& list = json["peers"];
        if (!list.is_array()) throw InputError(where, "field 'peers': expected a list");
        for (std::size_t i = 0; i < list.size(); ++i) {
            const std::string at = where + ": peers[" + std::to_string(i) + "]";
            if (!list[i].is_object()) throw InputError(at, "expected an object");
            PeerAgent peer;
            peer.name = get_string(list[i], "name", at);
            if (peer.name.empty()) throw InputError(at, "field 'name' is empty");
            if (c.find(peer.name)) throw InputError(at, "a second peer named '" + peer.name + "'");
            peer.endpoint.url = get_string(list[i], "url", at);
            try {
                net::parse_url(peer.endpoint.url);
            } catch (const InputError& e) {
                throw InputError(at, std::string("field 'url': ") + e.what());
            }
            // A token in agent.json itself (as agents before the secret store kept it).
            if (list[i].contains("token")) {
                peer.endpoint.token = get_string(list[i], "token", at);
                if (peer.endpoint.token.empty()) throw InputError(at, "field 'token' is empty");
                peer.token_in_file = true;
            }
            if (list[i].contains("fingerprint"))
                peer.endpoint.fingerprint = get_string(list[i], "fingerprint", at);
            if (net::parse_url(peer.endpoint.url).https && peer.endpoint.fingerprint.empty())
                throw InputError(at,
                                 "field 'fingerprint': needed for an https peer (its "
                                 "`crucible agent doctor` prints it)");
            c.peers.push_back(std::move(peer));
        }
    }
    return c;
}

const PeerAgent* ClusterConfig::find(const std::string& name) const {
    for (const auto& p : peers)
        if (p.name == name) return &p;
    return nullptr;
}

void ClusterConfig::take_tokens(const SecretStore& secrets, const std::string& where) {
    for (std::size_t i = 0; i < peers.size(); ++i) {
        PeerAgent& peer = peers[i];
        if (peer.token_in_file) continue;
        const auto token = secrets.get(peer_token_secret(peer.name));
        if (!token || token->empty())
            throw InputError(where + ": peers[" + std::to_string(i) + "]",
                             "no token for peer '" + peer.name +
                                 "' in the agent's secret store; "
                                 "store the one it made for this agent with `crucible agent peer "
                                 "add " +
                                 peer.name + " --url " + peer.endpoint.url + " --data ...`");
        peer.endpoint.token = *token;
    }
}

const PeerAgent* ClusterConfig::peer_at(const std::string& address) const {
    for (const auto& p : peers)
        if (net::parse_url(p.endpoint.url).host == address) return &p;
    return nullptr;
}

}  // namespace crucible::jobs
