// What one client may cost the agent and what the agent writes down about it: upload quotas
// and the disk reserve (checked against the declared size), bounded priorities, the audit log
// (every request with its status; floods without a token counted, not logged line by line;
// rotation), pushes that died halfway cleaned at start, and TLS that refuses old suites.
#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <fstream>

#include "core/base/file_io.h"
#include "core/jobs/audit_log.h"
#include "core/net/tls.h"
#include "tests/agent/agent_test_util.h"

using namespace crucible;
using namespace crucible::test;
namespace fs = std::filesystem;

namespace {

std::vector<Json> audit_lines(const fs::path& data) {
    std::vector<Json> out;
    std::ifstream in(data / "audit.log");
    std::string line;
    while (std::getline(in, line))
        out.push_back(Json::parse(line));
    return out;
}

struct LimitsFixture : ::testing::Test {
    fs::path data;
    std::unique_ptr<jobs::AgentService> agent;
    std::string token;
    int port = 0;

    void start(std::uint64_t quota = 0) {
        data = fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
        auto config = fake_agent_config(data);
        config.quota_bytes_per_user = quota;
        agent = std::make_unique<jobs::AgentService>(config);
        token = agent->tokens().create("carol");
        port = agent->start();
    }
    void TearDown() override {
        if (agent) agent->stop();
        agent.reset();
        fs::remove_all(data);
    }
    httplib::Result put(const std::string& path, const std::string& range,
                        const std::string& body) {
        httplib::Client cli("127.0.0.1", port);
        httplib::Headers h{{"Authorization", "Bearer " + token}};
        if (!range.empty()) h.emplace("Content-Range", range);
        return cli.Put(path.c_str(), h, body, "application/octet-stream");
    }
};

}  // namespace

TEST_F(LimitsFixture, DeclaredUploadSizesMeetTheReserveAndTheQuota) {
    start(/*quota=*/1u << 20);
    const std::string sha(64, 'a');
    // 10^19 - 1 bytes announced: refused before a byte is stored, whatever the disk holds.
    auto huge = put("/v1/blobs/" + sha, "bytes 0-9/9999999999999999999", std::string(10, 'x'));
    ASSERT_TRUE(huge);
    EXPECT_EQ(huge->status, 507);
    EXPECT_NE(huge->body.find("insufficient_storage"), std::string::npos) << huge->body;
    // Over carol's quota of 1 MB: refused, naming the quota.
    auto over =
        put("/v1/uploads/" + std::string(32, 'b'), "bytes 0-9/2000000", std::string(10, 'x'));
    ASSERT_TRUE(over);
    EXPECT_EQ(over->status, 507);
    EXPECT_NE(over->body.find("quota"), std::string::npos) << over->body;
    // Under it: accepted; what is stored counts towards the next one.
    auto under = put("/v1/uploads/" + std::string(32, 'c'), "bytes 0-599999/600000",
                     std::string(600000, 'y'));
    ASSERT_TRUE(under);
    EXPECT_EQ(under->status, 202) << under->body;
    auto second =
        put("/v1/uploads/" + std::string(32, 'd'), "bytes 0-9/600000", std::string(10, 'z'));
    ASSERT_TRUE(second);
    EXPECT_EQ(second->status, 507) << second->body;
    EXPECT_FALSE(fs::exists(data / "blobs" / sha));
}

TEST_F(LimitsFixture, PrioritiesAreBounded) {
    start();
    httplib::Client cli("127.0.0.1", port);
    httplib::Headers auth{{"Authorization", "Bearer " + token}};
    for (const char* priority : {"2147483647", "101", "-101", "1e9"}) {
        const std::string body = std::string(R"({"task":"test.fake","priority":)") + priority + "}";
        auto r = cli.Post("/v1/jobs", auth, body, "application/json");
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 400) << priority;
        EXPECT_NE(r->body.find("priority"), std::string::npos) << r->body;
    }
    auto fine =
        cli.Post("/v1/jobs", auth, R"({"task":"test.fake","priority":100})", "application/json");
    EXPECT_EQ(fine->status, 201);
}

TEST_F(LimitsFixture, EveryRequestIsAuditedAndFloodsAreCounted) {
    start();
    httplib::Client cli("127.0.0.1", port);
    httplib::Headers auth{{"Authorization", "Bearer " + token}};
    EXPECT_EQ(cli.Get("/v1/jobs", auth)->status, 200);
    EXPECT_EQ(cli.Get("/v1/jobs/j-none", auth)->status, 404);
    // A path that is not UTF-8 is answered (not 500) and logged readably.
    auto bad = cli.Get("/v1/jobs/%FF%FE", auth);
    ASSERT_TRUE(bad);
    EXPECT_LT(bad->status, 500);
    // 200 requests without a token with long paths: the first few are logged, the rest counted.
    const std::string long_path = "/v1/jobs/" + std::string(4000, 'x');
    int limited = 0;
    for (int i = 0; i < 200; ++i) {
        auto r = cli.Get(long_path.c_str());
        if (r && r->status == 429) ++limited;
    }
    EXPECT_GT(limited, 150);
    ASSERT_TRUE(wait_until([&] {
        for (const auto& line : audit_lines(data))
            if (line.value("detail", "").ends_with("-> 404")) return true;
        return false;
    }));
    const auto lines = audit_lines(data);
    int reads = 0, failures = 0, bad_path_lines = 0;
    for (const auto& line : lines) {
        const std::string detail = line.value("detail", "");
        EXPECT_LE(detail.size(), 600u) << "a client's path went into the log whole";
        if (line.value("who", "") == "carol" && line.value("action", "") == "GET") ++reads;
        if (line.value("action", "") == "auth_failed") ++failures;
        // The path's bytes 0xFF 0xFE reach the log as replacement characters (U+FFFD).
        if (line.value("who", "") == "carol" && detail.find("\xEF\xBF\xBD") != std::string::npos)
            ++bad_path_lines;
    }
    EXPECT_EQ(reads, 3) << "each read is audited with its status";
    EXPECT_LE(failures, 31) << "a flood without a token is logged line by line";
    EXPECT_GE(failures, 20);
    EXPECT_EQ(bad_path_lines, 1) << "the request with a path that is not UTF-8 left no audit line";
}

TEST(AuditLog, RotatesAtItsLimitKeepingTheNewestFiles) {
    auto dir = fresh_dir("audit_rotation");
    jobs::AuditLog log(dir / "audit.log", {.max_bytes = 2000, .keep = 2});
    for (int i = 0; i < 200; ++i)
        log.write("u", "GET", "/v1/jobs/" + std::to_string(i), 200, false);
    EXPECT_TRUE(fs::exists(dir / "audit.log"));
    EXPECT_TRUE(fs::exists(dir / "audit.log.1"));
    EXPECT_TRUE(fs::exists(dir / "audit.log.2"));
    EXPECT_FALSE(fs::exists(dir / "audit.log.3"));
    EXPECT_LE(fs::file_size(dir / "audit.log"), 2000u);
    EXPECT_NE(read_file_bytes(dir / "audit.log").find("/v1/jobs/199"), std::string::npos);
    fs::remove_all(dir);
}

TEST(AgentStart, PushesThatDiedHalfwayAreCleanedAtStart) {
    auto data = fresh_dir("partials");
    const std::string id(64, 'e');
    fs::create_directories(data / "datasets" / (id + ".partial-0123abcd") / "images");
    fs::create_directories(data / "datasets" / (id + ".partial"));
    fs::create_directories(data / "datasets" / id);  // renamed, but .complete never written
    fs::create_directories(data / "datasets" / std::string(64, 'f'));
    std::ofstream(data / "datasets" / std::string(64, 'f') / ".complete");
    jobs::AgentService agent(fake_agent_config(data));
    agent.start();
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(data / "datasets"))
        left.push_back(path_to_utf8(e.path().filename()));
    EXPECT_EQ(left, std::vector<std::string>{std::string(64, 'f')});
    agent.stop();
    fs::remove_all(data);
}

// Whether a TLS client limited to `max_version` and `ciphers` completes a handshake.
static bool tls_handshake(int port, int max_version, const char* ciphers) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(ctx, TLS1_VERSION);
    SSL_CTX_set_max_proto_version(ctx, max_version);
    SSL_CTX_set_security_level(ctx, 0);  // let the client offer the old suites
    SSL_CTX_set_cipher_list(ctx, ciphers);
    BIO* bio = BIO_new_ssl_connect(ctx);
    BIO_set_conn_hostname(bio, ("127.0.0.1:" + std::to_string(port)).c_str());
    const bool ok = BIO_do_connect(bio) == 1 && BIO_do_handshake(bio) == 1;
    BIO_free_all(bio);
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return ok;
}

TEST(AgentTls, OnlyTls12AndAeadSuitesAreAccepted) {
    auto data = fresh_dir("tls_suites");
    jobs::AgentService agent(fake_tls_agent_config(data));
    const int port = agent.start();
    EXPECT_TRUE(tls_handshake(port, TLS1_3_VERSION, "DEFAULT"));
    EXPECT_TRUE(tls_handshake(port, TLS1_2_VERSION, "ECDHE+AESGCM:ECDHE+CHACHA20"));
    EXPECT_FALSE(tls_handshake(port, TLS1_2_VERSION,
                               "AES128-SHA:ECDHE-RSA-AES128-SHA:ECDHE-ECDSA-AES128-SHA"))
        << "a CBC-SHA1 suite was accepted";
    EXPECT_FALSE(tls_handshake(port, TLS1_1_VERSION, "DEFAULT")) << "TLS 1.1 was accepted";
    agent.stop();
    fs::remove_all(data);
}
