// The agent API against a real AgentService on loopback with the fake worker.
#include <httplib.h>

#include <fstream>

#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/sha256.h"
#include "core/net/tls.h"
#include "tests/agent/agent_test_util.h"

using namespace crucible;
using namespace crucible::test;

namespace {

struct AgentFixture : ::testing::Test {
    std::filesystem::path data;
    std::unique_ptr<jobs::AgentService> agent;
    std::string token;
    int port = 0;

    void SetUp() override {
        data = fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
        agent = std::make_unique<jobs::AgentService>(fake_agent_config(data));
        token = agent->tokens().create("tester");
        port = agent->start();
    }
    void TearDown() override {
        agent->stop();
        agent.reset();
        std::filesystem::remove_all(data);
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
    net::ApiClient client() const { return net::ApiClient({url(), token, ""}); }
    httplib::Client raw() const { return httplib::Client("127.0.0.1", port); }
};

}  // namespace

TEST_F(AgentFixture, HealthIsOpenEverythingElseNeedsAToken) {
    auto cli = raw();
    auto health = cli.Get("/v1/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    for (const char* path : {"/v1/info", "/v1/jobs", "/v1/gpus", "/v1/datasets", "/v1/fs",
                             "/v1/jobs/jx/events", "/v1/jobs/jx/artifacts", "/v1/blobs/00"}) {
        auto r = cli.Get(path);
        ASSERT_TRUE(r) << path;
        EXPECT_EQ(r->status, 401) << path;
        EXPECT_NE(r->body.find("Bearer"), std::string::npos) << path;
    }
    auto post = cli.Post("/v1/jobs", "{}", "application/json");
    EXPECT_EQ(post->status, 401);
    httplib::Headers wrong{{"Authorization", "Bearer crt_wrong"}};
    EXPECT_EQ(cli.Get("/v1/info", wrong)->status, 401);
    EXPECT_EQ(client().get("/v1/info")["tasks"][0]["task"], "test.fake");
}

TEST_F(AgentFixture, RepeatedAuthFailuresAreSlowedDown) {
    auto cli = raw();
    // One stale token sent again and again (a form polling with it) is not guessing: the
    // address stays open for the right token.
    httplib::Headers stale{{"Authorization", "Bearer stale"}};
    for (int i = 0; i < 20; ++i)
        EXPECT_EQ(cli.Get("/v1/jobs", stale)->status, 401);
    EXPECT_EQ(client().get("/v1/info")["tasks"][0]["task"], "test.fake");
    // Distinct wrong tokens are guesses: after five (the stale one counted once) the address
    // waits.
    for (int i = 0; i < 4; ++i) {
        httplib::Headers wrong{{"Authorization", "Bearer guess" + std::to_string(i)}};
        EXPECT_EQ(cli.Get("/v1/jobs", wrong)->status, 401);
    }
    httplib::Headers wrong{{"Authorization", "Bearer one-more"}};
    auto r = cli.Get("/v1/jobs", wrong);
    EXPECT_EQ(r->status, 429);
    EXPECT_TRUE(r->has_header("Retry-After"));
    // The audit log recorded the failures.
    std::ifstream audit(data / "audit.log");
    std::string all((std::istreambuf_iterator<char>(audit)), {});
    EXPECT_NE(all.find("auth_failed"), std::string::npos);
}

TEST_F(AgentFixture, TokenCreatedWhileRunningIsAccepted) {
    net::TokenStore other(data / "tokens.json");  // what `crucible agent token create` does
    std::string late = other.create("late");
    net::ApiClient c({url(), late, ""});
    EXPECT_TRUE(c.get("/v1/jobs").contains("jobs"));
}

TEST_F(AgentFixture, SubmitFollowToTheEndAndDownload) {
    auto c = client();
    Json job =
        c.post("/v1/jobs", {{"task", "test.fake"}, {"options", {{"steps", 15}, {"delay_ms", 5}}}});
    std::string id = job["id"];
    std::vector<std::int64_t> seqs;
    std::string final_state;
    c.follow_events(id, -1, [&](const Event& e) {
        seqs.push_back(e.seq);
        if (e.kind == "status") final_state = e.fields.value("state", "");
        return true;
    });
    ASSERT_FALSE(seqs.empty());
    for (std::size_t i = 0; i < seqs.size(); ++i)
        EXPECT_EQ(seqs[i], static_cast<std::int64_t>(i));
    EXPECT_EQ(final_state, "succeeded");
    ASSERT_TRUE(wait_until([&] { return c.get("/v1/jobs/" + id)["state"] == "succeeded"; }));
    Json arts = c.get("/v1/jobs/" + id + "/artifacts");
    bool found = false;
    for (const auto& a : arts["artifacts"])
        found = found || a["path"] == "artifacts/best.safetensors";
    EXPECT_TRUE(found);
    auto out = data / "downloaded.bin";
    auto original = data / "jobs" / id / "artifacts" / "best.safetensors";
    const auto size = std::filesystem::file_size(original);
    // Cut the download short, then resume it: the second call fetches only the rest.
    std::uint64_t first_done = 0;
    EXPECT_THROW(c.download(id, "artifacts/best.safetensors", out, false,
                            [&](std::uint64_t done, std::uint64_t) {
                                first_done = done;
                                return done < 30000;
                            }),
                 Error);
    EXPECT_FALSE(std::filesystem::exists(out));  // only the part, never a half `out`
    auto part = out;
    part += ".crucible-part";
    ASSERT_TRUE(std::filesystem::exists(part));
    EXPECT_EQ(std::filesystem::file_size(part), first_done);
    std::uint64_t first_callback = 0;
    EXPECT_EQ(c.download(id, "artifacts/best.safetensors", out, false,
                         [&](std::uint64_t done, std::uint64_t total) {
                             if (!first_callback) first_callback = done;
                             EXPECT_EQ(total, size);
                             return true;
                         }),
              size);
    EXPECT_GT(first_callback, first_done);  // continued after the part, not from zero
    EXPECT_EQ(sha256_file(out), sha256_file(original));
    EXPECT_FALSE(std::filesystem::exists(part));
    // Events again after a given seq: exactly the rest.
    Json rest = c.get("/v1/jobs/" + id +
                      "/events?format=json&after=" + std::to_string(seqs[seqs.size() - 3]));
    EXPECT_EQ(rest["events"].size(), 2u);
}

// `crucible remote download` never resumes into a file it did not start: an existing file is
// refused (or replaced on request), a part whose record names another file, or whose file the
// agent has since replaced, starts again from zero.
TEST_F(AgentFixture, DownloadNeverResumesIntoAnUnrelatedFile) {
    auto c = client();
    Json job =
        c.post("/v1/jobs", {{"task", "test.fake"}, {"options", {{"steps", 2}, {"delay_ms", 1}}}});
    std::string id = job["id"];
    ASSERT_TRUE(wait_until([&] { return c.get("/v1/jobs/" + id)["state"] == "succeeded"; }));
    const std::string name = "artifacts/best.safetensors";
    auto original = data / "jobs" / id / name;
    auto out = data / "mine.bin";
    // 1. An existing file is the user's: refused and left alone, replaced only when asked.
    std::ofstream(out, std::ios::binary) << "my own notes, not a model";
    EXPECT_THROW(c.download(id, name, out), InputError);
    EXPECT_EQ(read_file_bytes(out), "my own notes, not a model");
    c.download(id, name, out, /*overwrite=*/true);
    EXPECT_EQ(sha256_file(out), sha256_file(original));
    std::filesystem::remove(out);
    // 2. A part without its record (or a record for another artifact) is not trusted.
    auto part = out;
    part += ".crucible-part";
    auto record = part;
    record += ".json";
    std::ofstream(part, std::ios::binary) << std::string(5000, 'x');
    c.download(id, name, out);
    EXPECT_EQ(sha256_file(out), sha256_file(original));
    std::filesystem::remove(out);
    std::ofstream(part, std::ios::binary) << std::string(5000, 'x');
    write_json_file(record,
                    {{"url", url()}, {"job", id}, {"artifact", "worker.log"}, {"etag", "\"1-2\""}});
    c.download(id, name, out);
    EXPECT_EQ(sha256_file(out), sha256_file(original));
    EXPECT_FALSE(std::filesystem::exists(record));
    std::filesystem::remove(out);
    // 3. The agent replaced the file since the part was fetched (same name, new content).
    EXPECT_THROW(c.download(id, name, out, false,
                            [](std::uint64_t done, std::uint64_t) { return done < 20000; }),
                 Error);
    ASSERT_TRUE(std::filesystem::exists(part));
    std::string replacement(150000, '\0');
    for (std::size_t i = 0; i < replacement.size(); ++i)
        replacement[i] = static_cast<char>(i * 7 + 3);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a new modification time
    write_file_atomically(original, replacement);
    EXPECT_EQ(c.download(id, name, out), replacement.size());
    EXPECT_EQ(read_file_bytes(out), replacement);
}

TEST_F(AgentFixture, HostileRequestsGetClearAnswers) {
    auto c = client();
    auto cli = raw();
    httplib::Headers auth{{"Authorization", "Bearer " + token}};
    auto bad_json = cli.Post("/v1/jobs", auth, "{not json", "application/json");
    EXPECT_EQ(bad_json->status, 400);
    EXPECT_NE(bad_json->body.find("invalid JSON"), std::string::npos);
    // Options nested 100,000 deep (a 200 KB body) once overflowed the stack quoting the value in
    // an error message: refused at the parser now, and the agent keeps serving.
    const std::string deep = R"({"task":"test.fake","options":{"steps":)" +
                             std::string(100000, '[') + std::string(100000, ']') + "}}";
    auto too_deep = cli.Post("/v1/jobs", auth, deep, "application/json");
    ASSERT_TRUE(too_deep) << "the agent did not answer a deeply nested body";
    EXPECT_EQ(too_deep->status, 400);
    EXPECT_NE(too_deep->body.find("nested deeper"), std::string::npos) << too_deep->body;
    EXPECT_EQ(cli.Get("/v1/health")->status, 200);
    EXPECT_EQ(cli.Post("/v1/jobs", auth, "task=x", "text/plain")->status, 415);
    auto unknown = cli.Post("/v1/jobs", auth, R"({"task":"test.fake","options":{"stepz":3}})",
                            "application/json");
    EXPECT_EQ(unknown->status, 400);
    EXPECT_NE(unknown->body.find("did you mean 'steps'"), std::string::npos);
    auto wrong_task = cli.Post("/v1/jobs", auth, R"({"task":"nope"})", "application/json");
    EXPECT_EQ(wrong_task->status, 400);
    auto outside = cli.Post("/v1/jobs", auth, R"({"task":"test.fake","options":{"data":"/etc"}})",
                            "application/json");
    EXPECT_EQ(outside->status, 400);
    EXPECT_NE(outside->body.find("outside the folders"), std::string::npos);
    auto two_gpus =
        cli.Post("/v1/jobs", auth, R"({"task":"test.fake","gpus":2})", "application/json");
    EXPECT_EQ(two_gpus->status, 400);
    EXPECT_NE(two_gpus->body.find("this agent has 0 GPU(s)"), std::string::npos) << two_gpus->body;
    EXPECT_EQ(cli.Get("/v1/jobs/..%2F..%2Fetc", auth)->status, 404);
    EXPECT_EQ(cli.Get("/v1/jobs/bad.id", auth)->status, 400);
    EXPECT_EQ(cli.Get("/v1/jobs/j-missing", auth)->status, 404);
    Json job =
        c.post("/v1/jobs", {{"task", "test.fake"}, {"options", {{"steps", 2}, {"delay_ms", 1}}}});
    std::string id = job["id"];
    ASSERT_TRUE(wait_until([&] { return c.get("/v1/jobs/" + id)["state"] == "succeeded"; }));
    EXPECT_EQ(cli.Get(("/v1/jobs/" + id + "/artifacts/../../tokens.json").c_str(), auth)->status,
              404);
    EXPECT_EQ(
        cli.Get(("/v1/jobs/" + id + "/artifacts/%2E%2E/%2E%2E/tokens.json").c_str(), auth)->status,
        404);
    auto bad_dataset =
        cli.Post("/v1/datasets", auth,
                 R"({"files":[{"path":"../x","sha256":")" + std::string(64, 'a') + R"("}]})",
                 "application/json");
    EXPECT_EQ(bad_dataset->status, 400);
    // Oversized body: the agent's payload limit answers 413 and keeps serving.
    std::string huge(65u << 20, 'x');
    auto too_big = cli.Post("/v1/jobs", auth, huge, "application/json");
    if (too_big) {
        EXPECT_EQ(too_big->status, 413);
    }
    EXPECT_EQ(cli.Get("/v1/health")->status, 200);
}

TEST_F(AgentFixture, StalledHalfRequestDoesNotBlockOthers) {
    httplib::Client slow("127.0.0.1", port);
    // A client that sends headers announcing a body and then nothing: its thread waits for the
    // read timeout; others are served meanwhile.
    std::thread stall([&] {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(static_cast<uint16_t>(port));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
            std::string half =
                "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"ta";
            ::send(fd, half.data(), half.size(), 0);
            std::this_thread::sleep_for(std::chrono::seconds(2));
        }
        ::close(fd);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(client().get("/v1/jobs").count("jobs"), 1u);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
    stall.join();
}

TEST_F(AgentFixture, BlobUploadResumesAfterACut) {
    auto file = data / "blob.bin";
    {
        std::ofstream out(file, std::ios::binary);
        for (int i = 0; i < 300000; ++i)
            out.put(static_cast<char>(i * 7));
    }
    const std::string sha = sha256_file(file);
    auto cli = raw();
    httplib::Headers auth{{"Authorization", "Bearer " + token}};
    // First 100,000 bytes arrive, then the connection is "cut".
    std::ifstream in(file, std::ios::binary);
    std::string first(100000, '\0');
    in.read(first.data(), 100000);
    auth.emplace("Content-Range", "bytes 0-99999/300000");
    auto r1 = cli.Put(("/v1/blobs/" + sha).c_str(), auth, first, "application/octet-stream");
    ASSERT_TRUE(r1);
    EXPECT_EQ(r1->status, 202);
    // A wrong offset is refused with the offset to continue from.
    httplib::Headers gap{{"Authorization", "Bearer " + token},
                         {"Content-Range", "bytes 200000-200009/300000"}};
    auto r2 = cli.Put(("/v1/blobs/" + sha).c_str(), gap, std::string(10, 'x'),
                      "application/octet-stream");
    EXPECT_EQ(r2->status, 409);
    EXPECT_EQ(r2->get_header_value("Upload-Offset"), "100000");
    // The client resumes from the agent's offset and finishes.
    std::uint64_t first_progress = 0;
    auto c = client();
    c.upload_blob(
        file,
        [&](std::uint64_t sent, std::uint64_t) {
            if (!first_progress) first_progress = sent;
        },
        64 * 1024);
    EXPECT_EQ(first_progress, 100000u);  // where it resumed, reported first
    EXPECT_EQ(sha256_file(data / "blobs" / sha), sha);
    // A second upload of the same content is skipped.
    std::uint64_t calls = 0;
    c.upload_blob(file, [&](std::uint64_t, std::uint64_t) { ++calls; });
    EXPECT_EQ(calls, 1u);
    // A whole body over the request limit is refused with 413, not reported as progress.
    std::string big((65u << 20), 'z');
    auto over = cli.Put(("/v1/blobs/" + std::string(64, 'c')).c_str(),
                        httplib::Headers{{"Authorization", "Bearer " + token}}, big,
                        "application/octet-stream");
    if (over) {
        EXPECT_EQ(over->status, 413);
        EXPECT_TRUE(over->has_header("Upload-Offset"));
    }
    // A blob whose content does not match its name is discarded.
    httplib::Headers auth2{{"Authorization", "Bearer " + token}};
    auto liar = cli.Put(("/v1/blobs/" + std::string(64, 'b')).c_str(), auth2, "hello",
                        "application/octet-stream");
    EXPECT_EQ(liar->status, 409);
    EXPECT_FALSE(std::filesystem::exists(data / "blobs" / std::string(64, 'b')));
}

// A large file is hashed on another thread while its bytes go to /v1/uploads/<id>: it ends up
// as the same verified blob, a cut upload resumes, a known blob stops the upload, and a wrong
// hash at `finish` discards it.
TEST_F(AgentFixture, LargeUploadIsHashedWhileItIsSent) {
    auto file = data / "large.bin";
    {
        std::ofstream out(file, std::ios::binary);
        for (int i = 0; i < 3000000; ++i)
            out.put(static_cast<char>((i * 2654435761u) >> 13));
    }
    const std::string sha = sha256_file(file);
    auto c = client();
    const std::uint64_t piece = 1u << 20, threshold = 1u << 20;
    // Cut: the first piece arrived before the client died.
    const std::string id = c.upload_id_for(file);
    EXPECT_EQ(id, c.upload_id_for(file));  // the same name when run again
    auto cli = raw();
    std::string first(piece, '\0');
    std::ifstream(file, std::ios::binary).read(first.data(), static_cast<std::streamsize>(piece));
    auto r1 = cli.Put(("/v1/uploads/" + id).c_str(),
                      httplib::Headers{{"Authorization", "Bearer " + token},
                                       {"Content-Range", "bytes 0-1048575/3000000"}},
                      first, "application/octet-stream");
    ASSERT_TRUE(r1);
    EXPECT_EQ(r1->status, 202);
    std::uint64_t first_progress = 0;
    EXPECT_EQ(c.upload_blob(
                  file,
                  [&](std::uint64_t sent, std::uint64_t) {
                      if (!first_progress) first_progress = sent;
                  },
                  piece, threshold),
              sha);
    EXPECT_EQ(first_progress, piece);  // resumed after the piece the agent had, reported first
    EXPECT_EQ(sha256_file(data / "blobs" / sha), sha);
    EXPECT_FALSE(std::filesystem::exists(data / "blobs" / "partial" / ("upload-" + id)));
    // Known blob: at most the pieces sent before the hash was ready go out, and nothing stays.
    std::uint64_t last = 0;
    EXPECT_EQ(c.upload_blob(
                  file, [&](std::uint64_t sent, std::uint64_t) { last = sent; }, piece, threshold),
              sha);
    EXPECT_EQ(last, 3000000u);
    EXPECT_FALSE(std::filesystem::exists(data / "blobs" / "partial" / ("upload-" + id)));
    // Bytes that do not hash to the name given at `finish` are discarded.
    httplib::Headers auth{{"Authorization", "Bearer " + token}};
    const std::string other(40, 'e');
    EXPECT_EQ(cli.Put(("/v1/uploads/" + other).c_str(), auth, "hello", "application/octet-stream")
                  ->status,
              202);
    auto wrong = cli.Post(("/v1/uploads/" + other + "/finish").c_str(), auth,
                          Json{{"sha256", std::string(64, 'a')}}.dump(), "application/json");
    EXPECT_EQ(wrong->status, 400);
    EXPECT_NE(wrong->body.find("discarded"), std::string::npos) << wrong->body;
    EXPECT_EQ(cli.Get(("/v1/uploads/" + other).c_str(), auth)->get_header_value("Upload-Offset"),
              "0");
    EXPECT_FALSE(std::filesystem::exists(data / "blobs" / std::string(64, 'a')));
    // Hostile ids never reach the file system (a decoded '/' leaves the route: 404).
    for (const char* bad :
         {"short", "..%2F..%2Ftokens.json", "EEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEE"}) {
        auto r = cli.Put((std::string("/v1/uploads/") + bad).c_str(), auth, "x",
                         "application/octet-stream");
        ASSERT_TRUE(r) << bad;
        EXPECT_TRUE(r->status == 400 || r->status == 404) << bad << ": " << r->status;
    }
    for (const auto& e : std::filesystem::directory_iterator(data / "blobs" / "partial")) {
        const std::string n = e.path().filename().string();
        EXPECT_TRUE(
            jobs::BlobStore::is_valid_hash(n) ||
            (n.rfind("upload-", 0) == 0 && jobs::BlobStore::is_valid_upload_id(n.substr(7))))
            << n;
    }
    auto no_upload = cli.Post(("/v1/uploads/" + std::string(40, 'f') + "/finish").c_str(), auth,
                              Json{{"sha256", sha}}.dump(), "application/json");
    EXPECT_EQ(no_upload->status, 201);  // the blob exists: finishing again is harmless
    auto none = cli.Post(("/v1/uploads/" + std::string(40, 'f') + "/finish").c_str(), auth,
                         Json{{"sha256", std::string(64, '1')}}.dump(), "application/json");
    EXPECT_EQ(none->status, 400);
}

TEST_F(AgentFixture, DatasetPushSkipsKnownBlobs) {
    auto folder = data / "ds";
    std::filesystem::create_directories(folder / "images");
    std::ofstream(folder / "data.yaml") << "path: .\ntrain: images\nval: images\nnames: [a]\n";
    std::ofstream(folder / "images" / "x.jpg") << "not really a jpeg";
    auto c = client();
    std::string id = c.push_dataset(folder, "tiny");
    EXPECT_EQ(id.size(), 64u);
    EXPECT_TRUE(std::filesystem::exists(data / "datasets" / id / "images" / "x.jpg"));
    EXPECT_EQ(c.push_dataset(folder, "tiny"), id);  // same content, same id
    // A job can reference it.
    Json job = c.post("/v1/jobs", {{"task", "test.fake"},
                                   {"options", {{"steps", 1}, {"data", "dataset:" + id}}}});
    EXPECT_NE(job["options"]["data"].get<std::string>().find(id), std::string::npos);
}

TEST_F(AgentFixture, CancelPauseResume) {
    // Through the typed client: one call per route, answers as types, errors with a kind.
    auto c = client();
    net::SubmitRequest request;
    request.task = "test.fake";
    request.options = {{"steps", 400}, {"delay_ms", 20}};
    request.name = "typed";
    const net::JobInfo submitted = c.submit(request);
    EXPECT_EQ(submitted.name, "typed");
    EXPECT_EQ(submitted.state, JobState::Queued);
    const std::string id = submitted.id;
    auto state_is = [&](JobState s) { return wait_until([&] { return c.job(id).state == s; }); };
    ASSERT_TRUE(state_is(JobState::Running));
    c.control(id, net::JobAction::Pause);
    ASSERT_TRUE(state_is(JobState::Paused));
    c.control(id, net::JobAction::Resume);
    ASSERT_TRUE(state_is(JobState::Running));
    c.control(id, net::JobAction::Cancel);
    ASSERT_TRUE(state_is(JobState::Canceled));
    // The resumed run wrote a rollback; every consumer drops superseded points.
    auto events = read_event_log(data / "jobs" / id / "events.jsonl");
    bool rollback = false;
    for (auto& e : events)
        rollback = rollback || e.kind == "rollback";
    EXPECT_TRUE(rollback);
    EXPECT_GE(c.events(id).size(), events.size());  // the same log, read again later
    ASSERT_EQ(c.jobs().size(), 1u);
    EXPECT_EQ(c.jobs()[0].id, id);
    try {
        c.control(id, net::JobAction::Cancel);
        FAIL() << "a finished job was canceled again";
    } catch (const net::ApiError& e) {
        EXPECT_EQ(e.kind(), net::ApiErrorKind::Conflict) << e.what();
        EXPECT_EQ(e.code(), "not_possible");
    }
    try {
        c.job("j-no-such-job");
        FAIL() << "an unknown job was found";
    } catch (const net::ApiError& e) {
        EXPECT_EQ(e.kind(), net::ApiErrorKind::NotFound) << e.what();
        EXPECT_EQ(e.code(), "no_such_job");
    }
    // A value that would change the route never leaves the client.
    EXPECT_THROW(c.job("../tokens"), InputError);
}

TEST_F(AgentFixture, CrashedWorkerRecordsWhy) {
    crucible::set_environment_variable("FAKE_WORKER_CRASH_AT", "3");
    auto c = client();
    std::string id = c.post(
        "/v1/jobs", {{"task", "test.fake"}, {"options", {{"steps", 10}, {"delay_ms", 1}}}})["id"];
    ASSERT_TRUE(wait_until([&] { return c.get("/v1/jobs/" + id)["state"] == "failed"; }));
    crucible::unset_environment_variable("FAKE_WORKER_CRASH_AT");
    Json j = c.get("/v1/jobs/" + id);
    std::string reason = j["reason"];
    EXPECT_NE(reason.find("exit code 7"), std::string::npos) << reason;
    EXPECT_NE(reason.find("boom: simulated crash"), std::string::npos) << reason;
}

TEST_F(AgentFixture, AnExitCodeWithoutAFinalStatusIsStillAFailureNamedByTheCode) {
    // Code 3 is the worker's "paused", but no status said so (no checkpoint is known to exist).
    crucible::set_environment_variable("FAKE_WORKER_CRASH_AT", "2");
    crucible::set_environment_variable("FAKE_WORKER_CRASH_CODE", "3");
    auto c = client();
    std::string id = c.post(
        "/v1/jobs", {{"task", "test.fake"}, {"options", {{"steps", 10}, {"delay_ms", 1}}}})["id"];
    ASSERT_TRUE(wait_until([&] { return c.get("/v1/jobs/" + id)["state"] == "failed"; }));
    crucible::unset_environment_variable("FAKE_WORKER_CRASH_AT");
    crucible::unset_environment_variable("FAKE_WORKER_CRASH_CODE");
    const std::string reason = c.get("/v1/jobs/" + id)["reason"];
    EXPECT_NE(reason.find("exit code 3, its code for paused"), std::string::npos) << reason;
}

TEST(AgentTls, PinnedFingerprintIsRequired) {
    auto data = fresh_dir("tls");
    jobs::AgentService agent(fake_tls_agent_config(data));
    std::string token = agent.tokens().create("t");
    int port = agent.start();
    std::string url = "https://127.0.0.1:" + std::to_string(port);
    EXPECT_TRUE(agent.tls());
    std::string seen = net::ApiClient::probe_fingerprint(url);
    EXPECT_EQ(seen, agent.fingerprint());
    net::ApiClient good({url, token, seen});
    EXPECT_TRUE(good.jobs().empty());
    EXPECT_TRUE(good.info().tls);
    // Another certificate (a different agent, or a man in the middle) is refused.
    auto other = net::ensure_self_signed_certificate(
        net::self_signed_certificate_paths(data / "other"), "127.0.0.1");
    net::ApiClient wrong({url, token, net::certificate_fingerprint_file(other.cert)});
    try {
        wrong.jobs();
        FAIL() << "a different certificate was accepted";
    } catch (const net::ApiError& e) {
        EXPECT_EQ(e.kind(), net::ApiErrorKind::CertificateMismatch) << e.what();
        EXPECT_NE(std::string(e.what()).find("fingerprint"), std::string::npos) << e.what();
    }
    EXPECT_THROW(net::ApiClient(net::RemoteEndpoint{url, token, ""}), InputError);
    agent.stop();
    std::filesystem::remove_all(data);
}

TEST(AgentGpus, FakeNvmlTwoGpusOneMigSplit) {
    auto report = jobs::GpuInventory::open(CRUCIBLE_FAKE_NVML)->read();
    ASSERT_TRUE(report.nvml);
    EXPECT_EQ(report.driver_version, "550.54.15");
    EXPECT_EQ(report.cuda_driver_version, 12040);
    ASSERT_EQ(report.gpus.size(), 2u);
    EXPECT_EQ(report.gpus[0].name, "NVIDIA Fake A100");
    EXPECT_EQ(report.gpus[0].utilization, 87);
    EXPECT_EQ(report.gpus[0].process_ids, std::vector<unsigned>{4242});
    EXPECT_FALSE(report.gpus[0].mig_enabled);
    EXPECT_TRUE(report.gpus[1].mig_enabled);
    EXPECT_EQ(report.gpus[1].mig.size(), 2u);
    EXPECT_EQ(report.gpus[1].mig[0].memory_total, 40ull << 30);
    auto none = jobs::GpuInventory::open("/nonexistent/libnvidia-ml.so.1")->read();
    EXPECT_FALSE(none.nvml);
    EXPECT_TRUE(none.gpus.empty());
    EXPECT_FALSE(none.note.empty());
}

// How close the GPUs are, as NVML tells it: a pair's common ancestor, NVLink above that.
TEST(AgentGpus, TopologyIsReadFromNvml) {
    const test_support::ScopedEnvironment three({{"FAKE_NVML_COUNT", "3"},
                                                 {"FAKE_NVML_TOPOLOGY", "0-1:10,0-2:20"},
                                                 {"FAKE_NVML_NVLINK", "2-1"}});
    const auto topology = jobs::GpuInventory::open(CRUCIBLE_FAKE_NVML)->topology();
    EXPECT_EQ(topology.between(0, 1), 10);
    EXPECT_EQ(topology.between(2, 0), 20);
    EXPECT_EQ(topology.between(1, 2), jobs::kNvLinkCost);
    EXPECT_TRUE(jobs::GpuInventory::open("/nonexistent/libnvidia-ml.so.1")->topology().empty());
}

// [B2 6/8] A job asking for several GPUs gets a whole set at once, one rank per GPU: its device
// option names them as the worker sees them, the worker sees only them, a 1-GPU job waits while
// they are taken, and what cannot run is refused at submit by name.
TEST(AgentGpus, SeveralGpusAreOneSetWithOneRankEach) {
    FakeGpuAgent gpus("gpu_set", {{"FAKE_NVML_NO_MIG", "1"}});  // two whole GPUs
    net::ApiClient& c = gpus.client;
    const Json slow = {{"steps", 400}, {"delay_ms", 20}};
    const std::string both =
        c.post("/v1/jobs", {{"task", "test.fake"}, {"gpus", 2}, {"options", slow}})["id"];
    ASSERT_TRUE(wait_until([&] { return c.get("/v1/jobs/" + both)["state"] == "running"; }));
    EXPECT_EQ(c.get("/v1/jobs/" + both)["gpu_ids"], Json::array({0, 1}));
    EXPECT_EQ(c.get("/v1/jobs/" + both)["options"]["device"], "cuda:0,cuda:1");
    ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(gpus.gpu_env(both)); }));
    EXPECT_EQ(read_file_bytes(gpus.gpu_env(both)),
              "CUDA_VISIBLE_DEVICES=0,1 CUDA_DEVICE_ORDER=PCI_BUS_ID\n");
    const std::string one = c.post("/v1/jobs", {{"task", "test.fake"}, {"options", slow}})["id"];
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_EQ(c.get("/v1/jobs/" + one)["state"], "queued") << "both GPUs are the first job's";
    const auto refused = [&](const Json& body, const std::string& says) {
        try {
            c.post("/v1/jobs", body);
            ADD_FAILURE() << body.dump() << " was accepted";
        } catch (const net::ApiError& e) {
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    };
    refused({{"task", "test.fake"}, {"gpus", 3}}, "this agent has 2 GPU(s)");
    refused({{"task", "test.fake"}, {"options", {{"device", "0,1"}}}}, "ask for a number of GPUs");
    for (const auto& id : {both, one})
        c.post("/v1/jobs/" + id + "/cancel", Json::object());
}

// [B2 6/8] Placement: a job asking for 2 of 4 GPUs gets the NVLinked pair (NVML's topology),
// a job naming GPUs gets exactly those (one rank each, as the worker sees them), and a GPU the
// agent does not have is refused at submit.
TEST(AgentGpus, SeveralGpusGoToTheClosestSetOrTheOnesNamed) {
    // 0-1 and 2-3 under one PCIe switch each, the switches apart; an NVLink joins 1 and 3.
    FakeGpuAgent gpus("gpu_place", {{"FAKE_NVML_NO_MIG", "1"},
                                    {"FAKE_NVML_COUNT", "4"},
                                    {"FAKE_NVML_TOPOLOGY", "0-1:10,2-3:10,0-2:50,0-3:50,1-2:50"},
                                    {"FAKE_NVML_NVLINK", "1-3"}});
    net::ApiClient& c = gpus.client;
    const Json slow = {{"steps", 400}, {"delay_ms", 20}};
    const std::string pair =
        c.post("/v1/jobs", {{"task", "test.fake"}, {"gpus", 2}, {"options", slow}})["id"];
    ASSERT_TRUE(wait_until([&] { return c.get("/v1/jobs/" + pair)["state"] == "running"; }));
    EXPECT_EQ(c.get("/v1/jobs/" + pair)["gpu_ids"], Json::array({1, 3})) << "the NVLinked pair";
    const std::string named =
        c.post("/v1/jobs", {{"task", "test.fake"}, {"gpu", {0, 2}}, {"options", slow}})["id"];
    ASSERT_TRUE(wait_until([&] { return c.get("/v1/jobs/" + named)["state"] == "running"; }));
    const Json job = c.get("/v1/jobs/" + named);
    EXPECT_EQ(job["gpu_ids"], Json::array({0, 2}));
    EXPECT_EQ(job["requested_gpus"], Json::array({0, 2}));
    EXPECT_EQ(job["options"]["device"], "cuda:0,cuda:1");
    ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(gpus.gpu_env(named)); }));
    EXPECT_EQ(read_file_bytes(gpus.gpu_env(named)),
              "CUDA_VISIBLE_DEVICES=0,2 CUDA_DEVICE_ORDER=PCI_BUS_ID\n");
    try {
        c.post("/v1/jobs", {{"task", "test.fake"}, {"gpu", {0, 7}}});
        ADD_FAILURE() << "GPU 7 of 4 was accepted";
    } catch (const net::ApiError& e) {
        EXPECT_NE(std::string(e.what()).find("no GPU 7"), std::string::npos) << e.what();
    }
    for (const auto& id : {pair, named})
        c.post("/v1/jobs/" + id + "/cancel", Json::object());
}

// MIG slices have no peer collectives: a job on several GPUs is refused, saying why.
TEST(AgentGpus, SeveralGpusAreRefusedOnMigSlices) {
    FakeGpuAgent gpus("gpu_mig");  // GPU 1 is split into MIG instances
    net::ApiClient& c = gpus.client;
    try {
        c.post("/v1/jobs", {{"task", "test.fake"}, {"gpus", 2}});
        ADD_FAILURE() << "2 GPUs with one split into MIG slices were accepted";
    } catch (const net::ApiError& e) {
        EXPECT_NE(std::string(e.what()).find("MIG slices"), std::string::npos) << e.what();
    }
}

// A job may ask for one GPU by the agent's index ("gpu"): it waits for that GPU even while
// another is free, jobs without a wish take any free one, and an index the agent does not have
// is refused at submit.
TEST(AgentGpus, RequestedGpuIsTheOneAssigned) {
    FakeGpuAgent gpus("gpu_pick");  // two GPUs: 0 and 1
    net::ApiClient& c = gpus.client;
    const Json slow = {{"steps", 400}, {"delay_ms", 20}};
    const std::string first =
        c.post("/v1/jobs", {{"task", "test.fake"}, {"gpu", 1}, {"options", slow}})["id"];
    ASSERT_TRUE(wait_until([&] { return c.get("/v1/jobs/" + first)["state"] == "running"; }));
    EXPECT_EQ(c.get("/v1/jobs/" + first)["gpu_ids"], Json::array({1}));
    // The worker sees only its GPU, numbered as NVML numbers them (PCI bus order).
    ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(gpus.gpu_env(first)); }));
    EXPECT_EQ(read_file_bytes(gpus.gpu_env(first)),
              "CUDA_VISIBLE_DEVICES=1 CUDA_DEVICE_ORDER=PCI_BUS_ID\n");
    const std::string second =
        c.post("/v1/jobs", {{"task", "test.fake"}, {"gpu", 1}, {"options", slow}})["id"];
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_EQ(c.get("/v1/jobs/" + second)["state"], "queued") << "GPU 1 is busy";
    // The queue keeps priority order, so a job without a wish waits behind the second one;
    // once the first ends, the second gets GPU 1 and the third GPU 0.
    const std::string third = c.post("/v1/jobs", {{"task", "test.fake"}, {"options", slow}})["id"];
    c.post("/v1/jobs/" + first + "/cancel", Json::object());
    ASSERT_TRUE(wait_until([&] { return c.get("/v1/jobs/" + second)["state"] == "running"; }));
    ASSERT_TRUE(wait_until([&] { return c.get("/v1/jobs/" + third)["state"] == "running"; }));
    EXPECT_EQ(c.get("/v1/jobs/" + second)["gpu_ids"], Json::array({1}));
    EXPECT_EQ(c.get("/v1/jobs/" + third)["gpu_ids"], Json::array({0}));
    try {
        c.post("/v1/jobs", {{"task", "test.fake"}, {"gpu", 5}});
        FAIL() << "GPU 5 was accepted";
    } catch (const net::ApiError& e) {
        EXPECT_NE(std::string(e.what()).find("no GPU 5"), std::string::npos) << e.what();
    }
    for (const auto& id : {second, third})
        c.post("/v1/jobs/" + id + "/cancel", Json::object());
}
