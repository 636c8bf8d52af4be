// The S3 client (core/net/s3_client.h) against a real S3-compatible server on loopback (moto,
// with SigV4 signatures checked): signed requests, multipart uploads whose parts carry their
// checksums, a part altered on the way sent again (and the upload aborted when it always is),
// an interrupted multipart upload resumed with only its missing parts, 503 answers retried, and
// the upload rate held under its cap. Without moto the tests fail naming the set-up command.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "core/base/file_io.h"
#include "core/base/sha256.h"
#include "tests/agent_cli/s3_test_server.h"
#include "tests/support/temp_dir.h"

using namespace crucible;
namespace fs = std::filesystem;

namespace {

std::string random_bytes(std::size_t n, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::string out(n, '\0');
    for (std::size_t i = 0; i < n; i += 8) {
        const auto v = rng();
        for (std::size_t k = 0; k < 8 && i + k < n; ++k)
            out[i + k] = static_cast<char>((v >> (8 * k)) & 0xff);
    }
    return out;
}

struct S3ClientTest : ::testing::Test {
    test_support::TempDir dir{"s3_client"};
    std::unique_ptr<test_support::MotoServer> moto;

    void SetUp() override {
        if (auto why = test_support::moto_missing()) FAIL() << *why;
        moto = std::make_unique<test_support::MotoServer>(dir / "moto.log");
        client()->create_bucket();
    }
    std::unique_ptr<net::S3Client> client(net::S3Options options = small_parts(),
                                          const std::string& endpoint = "") {
        net::S3Location where{endpoint.empty() ? moto->endpoint() : endpoint, "runs"};
        return std::make_unique<net::S3Client>(where, moto->credentials(), options);
    }
    static net::S3Options small_parts() {
        net::S3Options o;
        o.part_size = 5ull << 20;  // S3's smallest
        o.first_backoff = std::chrono::milliseconds(20);
        return o;
    }
    fs::path file_of(const std::string& name, const std::string& bytes) {
        const auto path = dir / name;
        write_file_atomically(path, bytes);
        return path;
    }
    std::string fetch(const std::string& key) {
        std::string sha;
        client()->get_object_to_file(key, dir / "fetched", &sha);
        return read_file_bytes(dir / "fetched");
    }
};

}  // namespace

TEST_F(S3ClientTest, SignedRequestsPutListGetAndDelete) {
    auto s3 = client();
    s3->put_object("runs/a b/ü.txt", "hello", {{"sha256", sha256_hex("hello")}});
    s3->put_object("runs/a b/z.txt", "world");
    const auto listed = s3->list("runs/a b/");
    ASSERT_EQ(listed.size(), 2u);
    EXPECT_EQ(listed[0].key, "runs/a b/z.txt");  // in byte order, as S3 lists
    EXPECT_EQ(listed[1].key, "runs/a b/ü.txt");
    EXPECT_EQ(listed[1].size, 5u);
    std::string sha;
    const auto meta = s3->get_object_to_file("runs/a b/ü.txt", dir / "got", &sha);
    EXPECT_EQ(read_file_bytes(dir / "got"), "hello");
    EXPECT_EQ(sha, sha256_hex("hello"));
    EXPECT_EQ(meta.at("sha256"), sha256_hex("hello"));
    s3->delete_object("runs/a b/z.txt");
    EXPECT_EQ(s3->list("runs/").size(), 1u);

    // A wrong secret is refused by the server's signature check.
    net::S3Client wrong({moto->endpoint(), "runs"},
                        {moto->credentials().access_key_id, "not-the-secret"}, small_parts());
    try {
        wrong.list("runs/");
        FAIL() << "a request signed with the wrong secret was accepted";
    } catch (const net::S3Error& e) {
        EXPECT_EQ(e.status(), 403) << e.what();
        EXPECT_EQ(e.code(), "SignatureDoesNotMatch") << e.what();
    }
}

TEST_F(S3ClientTest, MultipartUploadReassemblesTheFileWithItsMetadata) {
    const std::string bytes = random_bytes((12u << 20) + 12345, 1);
    const auto file = file_of("big.bin", bytes);
    net::MultipartProgress progress;
    int saves = 0;
    const auto outcome = client()->upload_file(
        "runs/r1/big.bin", file, {{"sha256", sha256_hex(bytes)}}, progress, [&] { ++saves; });
    EXPECT_TRUE(outcome.complete);
    EXPECT_EQ(outcome.parts_sent, 3);
    EXPECT_EQ(outcome.bytes_sent, bytes.size());
    EXPECT_EQ(saves, 4);  // the upload id, then each part
    EXPECT_TRUE(progress.upload_id.empty());
    std::string sha;
    const auto meta = client()->get_object_to_file("runs/r1/big.bin", dir / "back", &sha);
    EXPECT_EQ(sha, sha256_hex(bytes));
    EXPECT_EQ(meta.at("sha256"), sha256_hex(bytes));
}

TEST_F(S3ClientTest, PartAlteredOnTheWayIsSentAgain) {
    test_support::TamperProxy proxy(moto->port());
    proxy.corrupt_part(2, 1);
    const std::string bytes = random_bytes(11u << 20, 2);
    net::MultipartProgress progress;
    const auto outcome = client(small_parts(), proxy.endpoint())
                             ->upload_file("runs/r2/x.bin", file_of("x.bin", bytes), {}, progress);
    EXPECT_TRUE(outcome.complete);
    EXPECT_EQ(proxy.corrupted(), 1);
    EXPECT_EQ(outcome.parts_sent, 3);
    EXPECT_EQ(sha256_hex(fetch("runs/r2/x.bin")), sha256_hex(bytes))
        << "the altered part must not be part of the object";
}

TEST_F(S3ClientTest, PartAlteredEveryTimeIsRefusedAndTheUploadAborted) {
    test_support::TamperProxy proxy(moto->port());
    proxy.corrupt_part(2, -1);
    auto options = small_parts();
    options.attempts = 3;
    net::MultipartProgress progress;
    try {
        client(options, proxy.endpoint())
            ->upload_file("runs/r3/x.bin", file_of("x.bin", random_bytes(11u << 20, 3)), {},
                          progress);
        FAIL() << "an upload whose part always arrived altered completed";
    } catch (const net::S3Error& e) {
        EXPECT_EQ(e.code(), "BadDigest") << e.what();
    }
    EXPECT_EQ(proxy.corrupted(), 3);
    EXPECT_TRUE(progress.upload_id.empty());
    EXPECT_TRUE(client()->list("runs/r3/").empty()) << "no object may come of it";
}

TEST_F(S3ClientTest, InterruptedMultipartUploadResumesWithTheMissingPartsOnly) {
    const std::string bytes = random_bytes((20u << 20) + 7, 4);
    const auto file = file_of("resume.bin", bytes);
    Json saved;
    {
        net::MultipartProgress progress;
        const auto first = client()->upload_file(
            "runs/r4/resume.bin", file, {{"sha256", sha256_hex(bytes)}}, progress,
            [&] { saved = progress.to_json(); }, [&] { return progress.parts.size() >= 2; });
        EXPECT_FALSE(first.complete);
        EXPECT_EQ(first.parts_sent, 2);
        EXPECT_TRUE(client()->list("runs/r4/").empty());
    }
    // As after an agent restart: a new client, the progress read back from its file.
    auto progress = net::MultipartProgress::from_json(saved, "saved");
    ASSERT_EQ(progress.parts.size(), 2u);
    const auto second = client()->upload_file("runs/r4/resume.bin", file,
                                              {{"sha256", sha256_hex(bytes)}}, progress);
    EXPECT_TRUE(second.complete);
    EXPECT_EQ(second.parts_sent, 3);  // parts 3, 4 and 5 of 5
    EXPECT_EQ(second.bytes_sent, bytes.size() - (10u << 20));
    EXPECT_EQ(sha256_hex(fetch("runs/r4/resume.bin")), sha256_hex(bytes));
}

TEST_F(S3ClientTest, ServerErrorsAreRetriedWithBackoff) {
    test_support::TamperProxy proxy(moto->port());
    proxy.fail_next(2);
    client(small_parts(), proxy.endpoint())->put_object("runs/r5/a.txt", "retried");
    EXPECT_EQ(proxy.failed(), 2);
    EXPECT_EQ(fetch("runs/r5/a.txt"), "retried");

    auto options = small_parts();
    options.attempts = 2;
    proxy.fail_next(5);
    try {
        client(options, proxy.endpoint())->put_object("runs/r5/b.txt", "never");
        FAIL() << "503 after every attempt must fail";
    } catch (const net::S3Error& e) {
        EXPECT_EQ(e.status(), 503) << e.what();
    }
}

TEST_F(S3ClientTest, UploadRateStaysUnderTheCap) {
    const std::string bytes = random_bytes(10u << 20, 5);
    const auto file = file_of("capped.bin", bytes);
    auto timed = [&](std::uint64_t cap, const std::string& key) {
        auto options = small_parts();
        options.max_upload_bytes_per_s = cap;
        net::MultipartProgress progress;
        const auto t0 = std::chrono::steady_clock::now();
        client(options)->upload_file(key, file, {}, progress);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    const double free_s = timed(0, "runs/r6/free.bin");
    const std::uint64_t cap = 4u << 20;
    const double capped_s = timed(cap, "runs/r6/capped.bin");
    const double mb = static_cast<double>(bytes.size()) / (1 << 20);
    std::printf(
        "[ upload ] 10 MiB: uncapped %.2f s (%.1f MiB/s); cap 4 MiB/s: %.2f s (%.2f MiB/s)\n",
        free_s, mb / free_s, capped_s, mb / capped_s);
    const double floor_s = static_cast<double>(bytes.size()) / static_cast<double>(cap);
    EXPECT_GE(capped_s, 0.85 * floor_s) << "the cap was not applied";
    EXPECT_LE(capped_s, 2.5 * floor_s + free_s) << "the cap slowed the upload far below itself";
}
