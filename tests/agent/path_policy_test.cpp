// The shared-roots boundary: every hostile path form a client can name for a job, inside a
// data.yaml or as a dataset entry is refused with a message naming the option; the paths that
// are allowed reach the worker resolved and absolute. And the dataset store keeps its blobs
// intact when two entries land on one name.
#include "core/jobs/path_policy.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/sha256.h"
#include "core/jobs/dataset_store.h"
#include "tests/agent/agent_test_util.h"

using namespace crucible;
using namespace crucible::jobs;
namespace fs = std::filesystem;

namespace {

struct PolicyFixture : ::testing::Test {
    fs::path base, root, data, elsewhere;

    void SetUp() override {
        base = test::fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
        root = base / "shared";
        data = base / "agent";
        elsewhere = base / "private";
        for (const auto& d : {root / "coco" / "images", data / "jobs", elsewhere})
            fs::create_directories(d);
        std::ofstream(data / "tokens.json") << "{}";
        std::ofstream(elsewhere / "secret.txt") << "secret";
        std::ofstream(root / "coco" / "data.yaml") << "train: images\nval: images\nnames: [a]\n";
        std::ofstream(root / "coco" / "model.pt") << "w";
        std::ofstream(root / "中文 模型.pt") << "w";
    }
    void TearDown() override { fs::remove_all(base); }
    PathPolicy policy() const { return PathPolicy({root}, data); }

    // The message of the InputError `value` raises, "" when it passes.
    std::string refusal(const std::string& value) const {
        try {
            policy().resolve("data", value);
            return "";
        } catch (const InputError& e) {
            return e.what();
        }
    }
    void write_yaml(const fs::path& file, const std::string& text) const {
        std::ofstream(file) << text;
    }
};

}  // namespace

TEST_F(PolicyFixture, HostilePathFormsAreRefusedWithTheOptionNamed) {
    const std::string inside_data = path_to_utf8(data / "tokens.json");
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"../../../../x/data.yaml", "relative path"},
        {"coco/data.yaml", "relative path"},
        {"./model.pt", "relative path"},
        {".", "not a file name"},
        {"..", "not a file name"},
        {path_to_utf8(elsewhere / "secret.txt"), "outside the folders"},
        {path_to_utf8(root / ".." / "private" / "secret.txt"), "outside the folders"},
        {inside_data, "agent's own data folder"},
        {path_to_utf8(data), "agent's own data folder"},
        {path_to_utf8(base), "agent's own data folder"},  // a folder holding the data folder
        {"/etc/passwd", "outside the folders"},
        {"C:\\Windows\\System32\\config\\SAM", "Windows path"},
        {"C:model.pt", "Windows path"},
        {"\\\\server\\share\\data.yaml", "UNC"},
        {"//server/share/data.yaml", "UNC"},
        {"\\\\?\\C:\\x", "UNC"},
        {"CON", "reserved device"},
        {"nul.txt", "reserved device"},
        {"Com1", "reserved device"},
        {path_to_utf8(root / "LPT9" / "x.pt"), "reserved device"},
        {std::string("/tmp/\xff\xfe.pt"), "not a UTF-8 path"},
        {std::string("/tmp/a\0b", 8), "not a UTF-8 path"},
        {"/" + std::string(5000, 'a'), "longer than 4096"},
    };
    for (const auto& [value, expected] : cases) {
        const std::string message = refusal(value);
        EXPECT_NE(message.find(expected), std::string::npos)
            << "value '" << value.substr(0, 80) << "' gave: " << message;
        if (!message.empty()) {
            EXPECT_NE(message.find("data"), std::string::npos) << message;
        }
    }
}

TEST_F(PolicyFixture, AllowedPathsComeBackResolvedAndAbsolute) {
    EXPECT_EQ(policy().resolve("model", "yolov8n"), "yolov8n");  // a model name, not a path
    EXPECT_EQ(policy().resolve("data", ""), "");
    const std::string yaml = path_to_utf8(root / "coco" / ".." / "coco" / "data.yaml");
    EXPECT_EQ(policy().resolve("data", yaml),
              path_to_utf8(fs::canonical(root / "coco" / "data.yaml")));
    const std::string chinese = path_to_utf8(root / "中文 模型.pt");
    EXPECT_EQ(policy().resolve("model", chinese), path_to_utf8(fs::canonical(chinese)));
    EXPECT_TRUE(policy().may_browse(root / "coco"));
    EXPECT_FALSE(policy().may_browse(elsewhere));
}

TEST_F(PolicyFixture, SymlinksAreJudgedWhereTheyLead) {
    std::error_code ec;
    fs::create_symlink(elsewhere, root / "escape", ec);
    if (ec) GTEST_SKIP() << "this file system cannot make symlinks: " << ec.message();
    fs::create_symlink(data, root / "into-agent", ec);
    EXPECT_NE(refusal(path_to_utf8(root / "escape" / "secret.txt")).find("once its links"),
              std::string::npos);
    EXPECT_NE(refusal(path_to_utf8(root / "into-agent" / "tokens.json")).find("own data folder"),
              std::string::npos);
    EXPECT_FALSE(policy().may_browse(root / "escape"));
}

TEST_F(PolicyFixture, DataYamlPathsFollowTheSameRule) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"path: /etc\ntrain: .\nval: .\n", "field 'path'"},
        {"path: ../../private\ntrain: .\nval: .\n", "field 'path'"},
        {"train: ../../private\nval: images\n", "field 'train'"},
        {"train: images\nval: [images, " + path_to_utf8(elsewhere) + "]\n", "field 'val'"},
        {"train: images\nval: images\ntest: " + path_to_utf8(data / "jobs") + "\n", "field 'test'"},
        {"train: [\n", "not valid YAML"},
    };
    for (const auto& [text, expected] : cases) {
        write_yaml(root / "coco" / "data.yaml", text);
        const std::string message = refusal(path_to_utf8(root / "coco" / "data.yaml"));
        EXPECT_NE(message.find(expected), std::string::npos) << text << " gave: " << message;
    }
    // Inside the shared root, absolute or relative, is fine.
    write_yaml(root / "coco" / "data.yaml",
               "path: " + path_to_utf8(root / "coco") + "\ntrain: images\nval: ./images\n");
    EXPECT_EQ(refusal(path_to_utf8(root / "coco" / "data.yaml")), "");
    // A pushed dataset's yaml must stay inside the pushed folder, even where a root would do.
    write_yaml(root / "coco" / "data.yaml", "path: ..\ntrain: coco/images\nval: coco/images\n");
    EXPECT_EQ(refusal(path_to_utf8(root / "coco" / "data.yaml")), "");
    EXPECT_THROW(policy().check_data_yaml("data", root / "coco" / "data.yaml", root / "coco"),
                 InputError);
}

TEST(DatasetManifest, HostileEntryNamesAreRefusedNamingTheEntry) {
    const std::string sha(64, 'a');
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "empty"},
        {".", "'.'"},
        {"a/..", "'..'"},
        {"../x", "'..'"},
        {"a//b", "empty"},
        {"/etc/passwd", "absolute"},
        {"a\\..\\b", "backslash"},
        {"c:x", "colon"},
        {std::string(300, 'n'), "255 bytes"},
        {"images/CON.jpg", "reserved device"},
        {"manifest.json", "bookkeeping"},
        {".complete", "bookkeeping"},
        {std::string("bad\xc3(.jpg"), "UTF-8"},
        {"images/a.jpg.", "ending in a dot"},
        {"images /a.jpg", "ending in a dot or a space"},
        {"what?.jpg", "Windows forbids"},
        {"a|b.jpg", "Windows forbids"},
        {"a\"b.jpg", "Windows forbids"},
        {std::string("tab\there.jpg"), "control character"},
    };
    for (const auto& [path, expected] : cases) {
        Json body = {{"files", Json::array({{{"path", path}, {"sha256", sha}}})}};
        try {
            DatasetManifest::from_json(body);
            ADD_FAILURE() << "accepted '" << path << "'";
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("files[0]"), std::string::npos) << e.what();
        }
    }
    Json twice = {{"files", Json::array({{{"path", "a.jpg"}, {"sha256", sha}},
                                         {{"path", "a.jpg"}, {"sha256", sha}}})}};
    EXPECT_THROW(DatasetManifest::from_json(twice), InputError);
    try {
        DatasetManifest::from_json(twice);
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("listed twice"), std::string::npos) << e.what();
    }
    // Pairs NTFS files as one name: ASCII, accented Latin, Greek, Cyrillic, fullwidth Latin.
    const std::pair<std::string, std::string> case_pairs[] = {
        {"images/IMG.jpg", "images/img.jpg"},
        {"Été/É.jpg", "été/é.jpg"},
        {"ΣΟΦΙΑ.png", "σοφια.png"},
        {"Кошка.jpg", "кошка.jpg"},
        {"\xEF\xBC\xA1.jpg", "\xEF\xBD\x81.jpg"},  // Ａ and ａ
    };
    for (const auto& [first, second] : case_pairs) {
        Json case_only = {{"files", Json::array({{{"path", first}, {"sha256", sha}},
                                                 {{"path", second}, {"sha256", sha}}})}};
        try {
            DatasetManifest::from_json(case_only);
            ADD_FAILURE() << "accepted '" << first << "' and '" << second << "'";
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find("files[1]"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("only in case"), std::string::npos) << e.what();
        }
    }
    // Different names on NTFS too: "ß" has no one-letter capital, and Turkish dotted İ is not I.
    Json distinct = {{"files", Json::array({{{"path", "straße.jpg"}, {"sha256", sha}},
                                            {{"path", "strasse.jpg"}, {"sha256", sha}},
                                            {{"path", "İ.jpg"}, {"sha256", sha}},
                                            {{"path", "i.jpg"}, {"sha256", sha}}})}};
    EXPECT_EQ(DatasetManifest::from_json(distinct).files.size(), 4u);
    Json fine = {{"files", Json::array({{{"path", "图片/猫 1.jpg"}, {"sha256", sha}}})}};
    EXPECT_EQ(DatasetManifest::from_json(fine).files.size(), 1u);
}

// Two entries that land on one file (two names NTFS folds together; here the same name twice,
// which from_json refuses but a case-insensitive disk can still produce): the dataset folder
// ends up with one of them, and neither stored blob changes. Copying the second over the first
// (a hard link to its blob) used to rewrite the first blob in place.
TEST(DatasetStore, TwoEntriesOnOneNameLeaveTheBlobsIntact) {
    const auto dir = test::fresh_dir("dataset_store_collision");
    BlobStore blobs(dir / "blobs");
    const std::string first = "the first image's bytes";
    const std::string second = "another image, longer than the first";
    const std::string sha1 = sha256_hex(first), sha2 = sha256_hex(second);
    blobs.write_chunk(sha1, "alice", 0, first.size(), first);
    blobs.write_chunk(sha2, "alice", 0, second.size(), second);
    DatasetManifest manifest;
    manifest.files = {{fs::path("a.jpg"), sha1}, {fs::path("a.jpg"), sha2}};
    manifest.canonical = Json::array({{"a.jpg", sha1}, {"a.jpg", sha2}});
    DatasetStore store(dir / "datasets", blobs);
    store.create(manifest, "alice");
    EXPECT_EQ(read_file_bytes(blobs.path(sha1)), first);
    EXPECT_EQ(read_file_bytes(blobs.path(sha2)), second);
    EXPECT_EQ(read_file_bytes(store.folder(manifest.id()) / "a.jpg"), second) << "the last wins";
    fs::remove_all(dir);
}

TEST(PathPolicyAgent, RelativeJobPathNeverReachesTheWorker) {
    auto dir = test::fresh_dir("policy_agent");
    auto config = test::fake_agent_config(dir / "agent");
    config.roots = {dir / "shared"};
    fs::create_directories(dir / "shared");
    jobs::AgentService agent(config);
    const std::string token = agent.tokens().create("t");
    const int port = agent.start();
    httplib::Client cli("127.0.0.1", port);
    httplib::Headers auth{{"Authorization", "Bearer " + token}};
    for (const std::string& data : std::vector<std::string>{
             "../../../../x/data.yaml", path_to_utf8(dir / "agent" / "tokens.json")}) {
        const Json body = {{"task", "test.fake"}, {"options", {{"data", data}}}};
        auto r = cli.Post("/v1/jobs", auth, body.dump(), "application/json");
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 400) << data;
        EXPECT_NE(r->body.find("data"), std::string::npos) << r->body;
    }
    EXPECT_EQ(cli.Get("/v1/jobs", auth)->body.find("x/data.yaml"), std::string::npos);
    agent.stop();
    fs::remove_all(dir);
}
