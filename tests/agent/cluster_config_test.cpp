// agent.json "cluster" (core/jobs/cluster_config.h) is read at the agent's start: every mistake
// is refused with the file and the field, and the peers are found by name and by address.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/jobs/cluster_config.h"

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
        {"peer without a token", {{"peers", {{{"name", "b"}, {"url", "https://b"}}}}}, "token"},
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
