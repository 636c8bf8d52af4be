// `crucible agent peer add|list|remove` names the other agents this one may run jobs with
// (core/jobs/cluster_config.h): the peer's name, URL and certificate fingerprint go to
// <data>/agent.json "cluster", the token that peer made for this agent to the agent's secret
// store (<data>/secrets.json, owner-only). The token never appears on the command line: it comes
// from $CRUCIBLE_PEER_TOKEN or one line on standard input. No LibTorch here, so the CLI of the
// agent's tests is built with this file too.
#include <cstdio>
#include <string>
#include <vector>

#include "app/cli/agent_data.h"
#include "app/cli/cli_parser.h"
#include "app/cli/command.h"
#include "core/base/error.h"
#include "core/base/secret_store.h"
#include "core/jobs/agent_secrets.h"
#include "core/jobs/cluster_config.h"
#include "core/net/api_client.h"

namespace crucible::cli {
namespace {

constexpr const char* kTokenVariable = "CRUCIBLE_PEER_TOKEN";

void print_usage() {
    std::printf(
        "usage: crucible agent peer add NAME --url URL [--fingerprint FP] --data DIR [--no-check]\n"
        "       crucible agent peer list --data DIR\n"
        "       crucible agent peer remove NAME --data DIR\n\n"
        "Peers are agents that may train one run together with this one (crucible remote\n"
        "submit ... --servers NAME). On the peer, `crucible agent token create --name agent-HERE`\n"
        "makes the token this agent uses there; add reads it from $%s or, when that is unset,\n"
        "from one line on standard input, checks it against the peer (GET /v1/info) unless\n"
        "--no-check, and keeps it in the agent's secret store (DIR/secrets.json, owner-only),\n"
        "never in agent.json. An https peer needs --fingerprint (its `crucible agent doctor`\n"
        "prints it). agent.json \"cluster\" also needs \"host\" (this server's address on the\n"
        "cluster network) and may set \"ports\". Restart the agent afterwards.\n",
        kTokenVariable);
}

// agent.json "cluster", checked as the agent checks it (so every peer entry is well-formed).
Json cluster_of(const Json& agent) {
    Json cluster = agent.contains("cluster") ? agent["cluster"] : Json::object();
    jobs::ClusterConfig::from_json(cluster, "agent.json: cluster");
    if (!cluster.contains("peers")) cluster["peers"] = Json::array();
    return cluster;
}

// The peer entries other than `name`'s.
Json peers_but(const Json& cluster, const std::string& name) {
    Json peers = Json::array();
    for (const auto& p : cluster["peers"])
        if (p["name"].get<std::string>() != name) peers.push_back(p);
    return peers;
}

int run_add(const std::vector<std::string>& words) {
    CLI::App app{"Names a peer agent and stores the token it made for this one.",
                 "crucible agent peer add"};
    std::string name, url, fingerprint, data;
    bool no_check = false;
    app.add_option("name", name, "the peer's name (what --servers names)")->required();
    app.add_option("--url", url, "the peer agent's address, e.g. https://10.0.0.2:7443")
        ->required();
    app.add_option("--fingerprint", fingerprint,
                   "the peer's TLS certificate fingerprint (its crucible agent doctor prints it)");
    app.add_option("--data", data, "this agent's data folder (the --data of crucible-agent)");
    app.add_flag("--no-check", no_check, "store without asking the peer first");
    if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
    const auto dir = agent_data_folder(data);
    Json agent = read_agent_json(dir);
    Json cluster = cluster_of(agent);
    Json peers = peers_but(cluster, name);  // a peer added again replaces its entry
    Json entry = {{"name", name}, {"url", url}};
    if (!fingerprint.empty()) entry["fingerprint"] = fingerprint;
    peers.push_back(entry);
    cluster["peers"] = peers;
    // The same checks as the agent's when it reads agent.json.
    const auto config = jobs::ClusterConfig::from_json(cluster, "agent.json: cluster");
    const std::string token =
        secret_input(kTokenVariable, "token that " + name + " made for this agent", "token");
    if (!no_check) {
        net::RemoteEndpoint endpoint = config.find(name)->endpoint;
        endpoint.token = token;
        try {
            net::ApiClient(endpoint).info();
        } catch (const std::exception& e) {
            throw Error("peer " + name + " at " + url + " does not take this token: " + e.what() +
                        " (nothing stored; --no-check stores anyway)");
        }
    }
    SecretStore::open_file(jobs::agent_secrets_file(dir))
        ->put(jobs::peer_token_secret(name), token);
    agent["cluster"] = cluster;
    write_json_file(dir / "agent.json", agent);
    std::printf("peer %s: %s%s; token in the agent's secret store%s; restart the agent\n",
                name.c_str(), url.c_str(), no_check ? "" : " answers",
                config.host.empty() ? "; set agent.json \"cluster\": \"host\" too" : "");
    return 0;
}

int run_peer(const std::vector<std::string>& args) {
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        print_usage();
        return args.empty() ? 2 : 0;
    }
    const std::string& action = args[0];
    const std::vector<std::string> words(args.begin() + 1, args.end());
    if (action == "add") return run_add(words);
    if (action != "list" && action != "remove")
        throw InputError(action, "unknown action; use add, list or remove");
    CLI::App app{action == "list" ? "Lists the agent's peers (never their tokens)."
                                  : "Forgets a peer and its token.",
                 "crucible agent peer " + action};
    std::string name, data;
    if (action == "remove") app.add_option("name", name, "the peer's name")->required();
    app.add_option("--data", data, "this agent's data folder (the --data of crucible-agent)");
    if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
    const auto dir = agent_data_folder(data);
    Json agent = read_agent_json(dir);
    Json cluster = cluster_of(agent);
    auto secrets = SecretStore::open_file(jobs::agent_secrets_file(dir));
    if (action == "list") {
        if (cluster["peers"].empty())
            std::printf("no peers (add one with crucible agent peer add)\n");
        for (const auto& p : jobs::ClusterConfig::from_json(cluster, "agent.json: cluster").peers) {
            const bool stored =
                p.token_in_file || secrets->get(jobs::peer_token_secret(p.name)).has_value();
            std::printf("%s\t%s\t%s\ttoken: %s\n", p.name.c_str(), p.endpoint.url.c_str(),
                        p.endpoint.fingerprint.empty() ? "-" : p.endpoint.fingerprint.c_str(),
                        p.token_in_file ? "in agent.json (move it: peer add again)"
                        : stored        ? "stored"
                                        : "MISSING (crucible agent peer add)");
        }
        return 0;
    }
    const Json peers = peers_but(cluster, name);
    const bool known = peers.size() != cluster["peers"].size();
    const bool had_token = secrets->remove(jobs::peer_token_secret(name));
    if (!known && !had_token) throw InputError(name, "no such peer in agent.json \"cluster\"");
    cluster["peers"] = peers;
    agent["cluster"] = cluster;
    write_json_file(dir / "agent.json", agent);
    std::printf("peer %s removed; restart the agent\n", name.c_str());
    return 0;
}

const RegisterSubcommand peer_cmd({"agent", "peer",
                                   "add, list or remove the agents this one may run jobs with",
                                   &run_peer});

}  // namespace
}  // namespace crucible::cli
