// Users and roles on a real agent: each user sees and controls only their own jobs, datasets
// and uploads; an admin sees everyone's; a viewer reads jobs and changes nothing; expired and
// revoked tokens are refused; a locked-out address still lets valid tokens in.
#include <gtest/gtest.h>

#include <fstream>

#include "core/base/event.h"
#include "core/base/sha256.h"
#include "tests/agent/agent_test_util.h"

using namespace crucible;
using namespace crucible::test;

namespace {

struct UsersFixture : ::testing::Test {
    std::filesystem::path data;
    std::unique_ptr<jobs::AgentService> agent;
    std::string alice, bob, admin, viewer;
    int port = 0;

    void SetUp() override {
        data = fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
        agent = std::make_unique<jobs::AgentService>(fake_agent_config(data / "agent"));
        alice = agent->tokens().create("alice");
        bob = agent->tokens().create("bob");
        admin = agent->tokens().create("root", {net::TokenRole::Admin, 0});
        viewer = agent->tokens().create("wall", {net::TokenRole::Viewer, 0});
        port = agent->start();
    }
    void TearDown() override {
        agent->stop();
        agent.reset();
        std::filesystem::remove_all(data);
    }
    net::ApiClient as(const std::string& token) const {
        return net::ApiClient({"http://127.0.0.1:" + std::to_string(port), token, ""});
    }
    int status_of(const std::string& token, const std::string& method, const std::string& path,
                  const std::string& body = "{}") const {
        httplib::Client cli("127.0.0.1", port);
        httplib::Headers auth{{"Authorization", "Bearer " + token}};
        httplib::Result r = method == "GET" ? cli.Get(path.c_str(), auth)
                            : method == "POST"
                                ? cli.Post(path.c_str(), auth, body, "application/json")
                                : cli.Delete(path.c_str(), auth);
        return r ? r->status : -1;
    }
    std::string submit(const std::string& token, int steps = 200) const {
        return as(token).post(
            "/v1/jobs",
            {{"task", "test.fake"}, {"options", {{"steps", steps}, {"delay_ms", 20}}}})["id"];
    }
    static std::size_t count_jobs(net::ApiClient c) { return c.get("/v1/jobs")["jobs"].size(); }
};

}  // namespace

TEST_F(UsersFixture, EachUserSeesAndControlsOnlyTheirOwnJobs) {
    const std::string a = submit(alice);
    EXPECT_EQ(count_jobs(as(alice)), 1u);
    EXPECT_EQ(count_jobs(as(bob)), 0u) << "bob listed alice's job";
    EXPECT_EQ(count_jobs(as(admin)), 1u);
    EXPECT_EQ(count_jobs(as(viewer)), 1u);

    // Someone else's job answers as if it did not exist, for every route.
    const std::string job = "/v1/jobs/" + a;
    for (const auto& [method, path] :
         std::vector<std::pair<std::string, std::string>>{{"GET", job},
                                                          {"GET", job + "/events?format=json"},
                                                          {"GET", job + "/artifacts"},
                                                          {"POST", job + "/pause"},
                                                          {"POST", job + "/cancel"},
                                                          {"DELETE", job}})
        EXPECT_EQ(status_of(bob, method, path), 404) << method << " " << path;

    // The viewer reads the job but changes nothing; it cannot submit either.
    EXPECT_EQ(status_of(viewer, "GET", job), 200);
    EXPECT_EQ(status_of(viewer, "GET", job + "/events?format=json"), 200);
    EXPECT_EQ(status_of(viewer, "POST", job + "/cancel"), 403);
    EXPECT_EQ(status_of(viewer, "GET", job + "/artifacts"), 403);
    EXPECT_EQ(status_of(viewer, "POST", "/v1/jobs", R"({"task":"test.fake"})"), 403);

    // The admin controls everyone's.
    EXPECT_EQ(status_of(admin, "POST", job + "/cancel"), 202);
    ASSERT_TRUE(wait_until([&] { return as(alice).get(job)["state"] == "canceled"; }));
    EXPECT_EQ(as(alice).get(job)["submitted_by"], "alice");
}

TEST_F(UsersFixture, ExpiredAndRevokedTokensAreRefused) {
    const std::string short_lived =
        agent->tokens().create("temp", {net::TokenRole::User, unix_time_now() + 1.0});
    EXPECT_EQ(status_of(short_lived, "GET", "/v1/jobs"), 200);
    ASSERT_TRUE(wait_until([&] { return status_of(short_lived, "GET", "/v1/jobs") == 401; },
                           std::chrono::seconds(5)));
    EXPECT_EQ(status_of(bob, "GET", "/v1/jobs"), 200);
    ASSERT_TRUE(agent->tokens().revoke("bob"));
    EXPECT_EQ(status_of(bob, "GET", "/v1/jobs"), 401);
}

TEST_F(UsersFixture, LockedOutAddressStillLetsValidTokensIn) {
    for (int i = 0; i < 8; ++i)
        status_of("guess" + std::to_string(i), "GET", "/v1/jobs");
    EXPECT_EQ(status_of("guess-more", "GET", "/v1/jobs"), 429);
    // Every RDP user of a server comes from one address: a guesser there locks nobody out.
    EXPECT_EQ(status_of(alice, "GET", "/v1/jobs"), 200);
    EXPECT_EQ(status_of(bob, "GET", "/v1/jobs"), 200);
}

TEST_F(UsersFixture, BlobsAndDatasetsBelongToWhoeverSentThem) {
    auto folder = data / "ds";
    std::filesystem::create_directories(folder / "images");
    std::ofstream(folder / "data.yaml") << "train: images\nval: images\nnames: [a]\n";
    std::ofstream(folder / "images" / "x.jpg") << "alice's picture";
    const std::string id = as(alice).push_dataset(folder, "mine");
    const std::string sha = sha256_file(folder / "images" / "x.jpg");

    // Bob learns nothing about alice's uploads: not the blob, not the dataset.
    EXPECT_EQ(status_of(bob, "GET", "/v1/blobs/" + sha), 404);
    EXPECT_EQ(as(bob).get("/v1/datasets")["datasets"].size(), 0u);
    EXPECT_EQ(as(alice).get("/v1/datasets")["datasets"].size(), 1u);
    EXPECT_EQ(as(admin).get("/v1/datasets")["datasets"].size(), 1u);
    const std::string use_dataset =
        R"({"task":"test.fake","options":{"data":"dataset:)" + id + R"("}})";
    EXPECT_EQ(status_of(bob, "POST", "/v1/jobs", use_dataset), 400);
    const std::string use_blob =
        R"({"task":"test.fake","options":{"model":"blob:)" + sha + R"(/x.jpg"}})";
    EXPECT_EQ(status_of(bob, "POST", "/v1/jobs", use_blob), 400);
    const std::string manifest = R"({"files":[{"path":"images/x.jpg","sha256":")" + sha + R"("}]})";
    EXPECT_EQ(status_of(bob, "POST", "/v1/datasets", manifest), 409) << "bob used alice's blob";
    EXPECT_EQ(status_of(alice, "POST", "/v1/jobs", use_dataset), 201);
    EXPECT_EQ(status_of(viewer, "POST", "/v1/datasets", manifest), 403);

    // Bob with the same files proves he has them by sending them; then they are his too, and
    // the agent still keeps one copy.
    EXPECT_EQ(as(bob).push_dataset(folder, "mine"), id);
    EXPECT_EQ(status_of(bob, "POST", "/v1/jobs", use_dataset), 201);
    EXPECT_EQ(status_of(bob, "GET", "/v1/blobs/" + sha), 200);
}

TEST_F(UsersFixture, UploadIdsOfOneUserAreNotAnothers) {
    const std::string id(32, 'a');
    httplib::Client cli("127.0.0.1", port);
    httplib::Headers alice_auth{{"Authorization", "Bearer " + alice},
                                {"Content-Range", "bytes 0-9/20"}};
    auto put = cli.Put(("/v1/uploads/" + id).c_str(), alice_auth, std::string(10, 'x'),
                       "application/octet-stream");
    ASSERT_TRUE(put);
    EXPECT_EQ(put->status, 202);
    // Bob's view of the same id is an empty upload of his own, and dropping it leaves alice's.
    EXPECT_EQ(as(bob).get("/v1/uploads/" + id)["offset"], 0);
    EXPECT_EQ(status_of(bob, "DELETE", "/v1/uploads/" + id), 200);
    EXPECT_EQ(as(alice).get("/v1/uploads/" + id)["offset"], 10);
}

// Revoking a token ends the streams it opened within seconds, not when the client hangs up.
TEST_F(UsersFixture, RevocationEndsOpenStreams) {
    const std::string id = submit(alice, 2000);
    const auto stream_ends_after_revoke = [&](const std::string& token, const std::string& name,
                                              const std::string& path) {
        std::atomic<bool> opened{false}, ended{false};
        std::thread reader([&] {
            httplib::Client cli("127.0.0.1", port);
            cli.set_read_timeout(30, 0);
            cli.Get(path.c_str(), {{"Authorization", "Bearer " + token}}, [&](const char*, size_t) {
                opened = true;
                return true;
            });
            ended = true;
        });
        EXPECT_TRUE(wait_until([&] { return opened.load(); }, std::chrono::seconds(10)))
            << path << " sent nothing";
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        EXPECT_FALSE(ended.load()) << path << " ended before the revocation";
        const auto revoked_at = std::chrono::steady_clock::now();
        EXPECT_TRUE(agent->tokens().revoke(name));
        const bool ended_soon = wait_until([&] { return ended.load(); }, std::chrono::seconds(8));
        EXPECT_TRUE(ended_soon) << path << " kept streaming after its token was revoked";
        if (ended_soon) {
            EXPECT_LT(std::chrono::steady_clock::now() - revoked_at, std::chrono::seconds(6));
        }
        reader.join();
    };
    // The server-wide feed sends a keepalive at least every second, so it has bytes at once.
    stream_ends_after_revoke(bob, "bob", "/v1/stream");
    stream_ends_after_revoke(alice, "alice", "/v1/jobs/" + id + "/events");
}
