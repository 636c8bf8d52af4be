// agent.json "cluster" (core/jobs/cluster_config.h) is read at the agent's start: every mistake
// is refused with the file and the field, and the peers are found by name and by address.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/base/secret_store.h"
#include "core/jobs/agent_secrets.h"
#include "core/jobs/cluster_config.h"
#include "tests/support/temp_dir.h"

using namespace crucible;
using jobs::ClusterConfig;

TEST(ClusterConfig, ReadsPeersPortsAndHost) {
    const ClusterConfig c = ClusterConfig::from_json({{"host", "10.0.0.1"},
                                                      {"ports", {29500, 29510}},
                                                      {"peers",
                                                       {{{"name", "b"},
                                                         {"url", "https://10.0.0.2:7443"},
                                                         {"token", "crt_b"},
                                                         {"fingerprint", "01:02"}},
                                                        {{"name", "服务器"},
                                                         {"url", "http://gpu3:7443"},
                                                         {"token", "crt_c"},
                                                         {"fingerprint", "AB:CD"}}}}},
                                                     "agent.json: cluster");
    EXPECT_EQ(c.host, "10.0.0.1");
    EXPECT_EQ(c.first_port, 29500);
    EXPECT_EQ(c.last_port, 29510);
    ASSERT_NE(c.find("服务器"), nullptr);
    EXPECT_EQ(c.find("服务器")->endpoint.fingerprint, "AB:CD");
    EXPECT_EQ(c.find("c"), nullptr);
    ASSERT_NE(c.peer_at("10.0.0.2"), nullptr);
    EXPECT_EQ(c.peer_at("10.0.0.2")->name, "b");
    EXPECT_EQ(c.peer_at("gpu3")->endpoint.token, "crt_c");
    EXPECT_EQ(c.peer_at("10.0.0.9"), nullptr);
    // Nothing given: no peers, the default range.
    const ClusterConfig empty = ClusterConfig::from_json(Json::object(), "x");
    EXPECT_TRUE(empty.peers.empty());
    EXPECT_LE(empty.first_port, empty.last_port);
}

TEST(ClusterConfig, HostileEntriesAreRefusedNamingTheField) {
    const Json peer = {{"name", "b"}, {"url", "http://b:7443"}, {"token", "t"}};
    Json deep = Json::array();
    for (int i = 0; i < 2000; ++i)
        deep = Json::array({deep});
    const struct {
        const char* what;
        Json json;
        const char* named;
    } table[] = {
        {"not an object", Json::array(), "expected an object"},
        {"host a number", {{"host", 3}}, "host"},
        {"ports one number", {{"ports", 29400}}, "ports"},
        {"ports of three", {{"ports", {1, 2, 3}}}, "ports"},
        {"ports reversed", {{"ports", {29500, 29400}}}, "ports"},
        {"privileged ports", {{"ports", {22, 80}}}, "ports"},
        {"ports past 65535", {{"ports", {60000, 70000}}}, "ports"},
        {"ports as text", {{"ports", {"a", "b"}}}, "ports"},
        {"peers an object", {{"peers", peer}}, "peers"},
        {"peer a string", {{"peers", {"b"}}}, "peers[0]"},
        {"peer without a name", {{"peers", {{{"url", "https://b"}, {"token", "t"}}}}}, "name"},
        {"peer with an empty name",
         {{"peers", {{{"name", ""}, {"url", "https://b"}, {"token", "t"}}}}},
         "empty"},
        {"peer with an empty token",
         {{"peers", {{{"name", "b"}, {"url", "http://b"}, {"token", ""}}}}},
         "token"},
        {"peer token a list",
         {{"peers", {{{"name", "b"}, {"url", "http://b"}, {"token", {"t"}}}}}},
         "token"},
        {"peer with a bad url",
         {{"peers", {{{"name", "b"}, {"url", "ftp://b"}, {"token", "t"}}}}},
         "peers[0]"},
        {"peer twice", {{"peers", {peer, peer}}}, "second peer"},
        {"peers deeply nested", {{"peers", deep}}, "peers[0]"},
        {"https peer without a fingerprint",
         {{"peers", {{{"name", "b"}, {"url", "https://b"}, {"token", "t"}}}}},
         "fingerprint"},
        {"fingerprint a number",
         {{"peers", {{{"name", "b"}, {"url", "https://b"}, {"token", "t"}, {"fingerprint", 1}}}}},
         "fingerprint"},
    };
    for (const auto& c : table) {
        try {
            ClusterConfig::from_json(c.json, "agent.json: cluster");
            ADD_FAILURE() << c.what << ": accepted";
        } catch (const InputError& e) {
            const std::string message = e.what();
            EXPECT_NE(message.find("agent.json: cluster"), std::string::npos) << c.what;
            EXPECT_NE(message.find(c.named), std::string::npos) << c.what << ": " << message;
        }
    }
}

// Tokens live in the agent's secret store (`crucible agent peer add`); one that agent.json still
// holds is used as it is, and a peer with neither is refused naming it and what to run.
TEST(ClusterConfig, PeerTokensComeFromTheSecretStore) {
    const test_support::TempDir dir("cluster_tokens");
    auto secrets = SecretStore::open_file(dir / "secrets.json");
    secrets->put(jobs::peer_token_secret("b"), "crt_from_store");
    ClusterConfig c = ClusterConfig::from_json(
        {{"host", "10.0.0.1"},
         {"peers",
          {{{"name", "b"}, {"url", "http://10.0.0.2:7443"}},
           {{"name", "c"}, {"url", "http://10.0.0.3:7443"}, {"token", "crt_in_file"}}}}},
        "agent.json: cluster");
    EXPECT_FALSE(c.find("b")->token_in_file);
    EXPECT_TRUE(c.find("c")->token_in_file);
    c.take_tokens(*secrets, "agent.json: cluster");
    EXPECT_EQ(c.find("b")->endpoint.token, "crt_from_store");
    EXPECT_EQ(c.find("c")->endpoint.token, "crt_in_file");

    ClusterConfig missing = ClusterConfig::from_json(
        {{"peers", {{{"name", "d"}, {"url", "http://10.0.0.4:7443"}}}}}, "agent.json: cluster");
    try {
        missing.take_tokens(*secrets, "agent.json: cluster");
        ADD_FAILURE() << "a peer without a token was accepted";
    } catch (const InputError& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("peers[0]"), std::string::npos) << message;
        EXPECT_NE(message.find("crucible agent peer add d"), std::string::npos) << message;
    }
}
