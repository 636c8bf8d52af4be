// remotes.json: round trip, atomic save, and hostile content rejected with messages that name
// the file, the entry and the field.
#include <gtest/gtest.h>

#include <fstream>

#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/secret_store.h"
#include "core/net/loopback.h"
#include "core/net/remote_config.h"
#include "tests/support/temp_dir.h"

using namespace crucible;
using namespace crucible::net;

namespace {

const std::string kFp =
    "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:"
    "67:89";

struct RemoteConfigTest : ::testing::Test {
    std::filesystem::path dir;
    void SetUp() override {
        dir = test_support::scratch_dir(
            std::string("remote_cfg_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    }
    void TearDown() override { std::filesystem::remove_all(dir); }
    void write(const std::string& text) const {
        std::ofstream(dir / "remotes.json", std::ios::binary) << text;
    }
    std::string load_error() const {
        try {
            RemoteConfig::load(dir / "remotes.json");
        } catch (const InputError& e) {
            return e.what();
        }
        return "";
    }
};

}  // namespace

TEST_F(RemoteConfigTest, MissingFileIsEmptyAndRoundTripKeepsEntries) {
    auto cfg = RemoteConfig::load(dir / "remotes.json");
    EXPECT_TRUE(cfg.remotes().empty());
    cfg.add({"local", "http://127.0.0.1:7443", ""});
    cfg.add({"gpu1", "https://gpu1.lan:7443", kFp});
    // Chinese folder names work (path_from_utf8 at the edge).
    auto file = dir / path_from_utf8("配置") / "remotes.json";
    cfg.save(file);
    auto back = RemoteConfig::load(file);
    ASSERT_EQ(back.remotes().size(), 2u);
    EXPECT_EQ(back.require("gpu1").fingerprint, kFp);
    EXPECT_EQ(back.require("local").url, "http://127.0.0.1:7443");
    // No token and no temp file left behind.
    std::string text = read_file_bytes(file);
    EXPECT_EQ(text.find("token"), std::string::npos);
    for (const auto& e : std::filesystem::directory_iterator(file.parent_path()))
        EXPECT_EQ(e.path().filename(), "remotes.json");
    EXPECT_EQ(remote_secret_key({"gpu1", "https://gpu1.lan:7443", kFp}), "remote:gpu1");
}

TEST_F(RemoteConfigTest, AddRemoveAndDuplicates) {
    RemoteConfig cfg;
    cfg.add({"a", "http://127.0.0.1:1", ""});
    try {
        cfg.add({"a", "http://127.0.0.1:2", ""});
        FAIL() << "duplicate accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("remote rm a"), std::string::npos) << e.what();
    }
    cfg.add({"a", "http://127.0.0.1:2", ""}, /*replace=*/true);
    EXPECT_EQ(cfg.require("a").url, "http://127.0.0.1:2");
    EXPECT_TRUE(cfg.remove("a"));
    EXPECT_FALSE(cfg.remove("a"));
    try {
        cfg.require("a");
        FAIL();
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("remote ls"), std::string::npos);
    }
}

TEST_F(RemoteConfigTest, InvalidEntriesAreRejectedNamingTheField) {
    struct Case {
        RemoteEntry entry;
        std::string field;
    };
    const std::vector<Case> cases = {
        {{"", "http://127.0.0.1:1", ""}, "name"},
        {{"../x", "http://127.0.0.1:1", ""}, "name"},
        {{"名字", "http://127.0.0.1:1", ""}, "name"},
        {{std::string(65, 'a'), "http://127.0.0.1:1", ""}, "name"},
        {{"a", "ftp://host:1", ""}, "url"},
        {{"a", "http://host:99999", ""}, "url"},
        {{"a", "http://host:1/v1/jobs", ""}, "url"},
        {{"a", "", ""}, "url"},
        {{"a", "https://host:1", ""}, "fingerprint"},
        {{"a", "https://host:1", "AB:CD"}, "fingerprint"},
        {{"a", "https://host:1", "ab" + kFp.substr(2)}, "fingerprint"},
        {{"a", "http://host:1", kFp}, "fingerprint"},
    };
    for (const auto& c : cases) {
        try {
            validate_remote(c.entry);
            ADD_FAILURE() << "accepted " << c.entry.name << " " << c.entry.url;
        } catch (const InputError& e) {
            EXPECT_EQ(e.where(), c.field) << e.what();
        }
    }
    EXPECT_NO_THROW(validate_remote({"ok", "https://[::1]:7443", kFp}));
}

TEST_F(RemoteConfigTest, HostileFilesAreRejectedWithTheFileAndEntryNamed) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "remotes.json"},
        {"{", "remotes.json"},
        {"[]", "expected {\"remotes\""},
        {R"({"remotes": {}})", "expected {\"remotes\""},
        {R"({"remotes": [1]})", "remotes[0]"},
        {R"({"remotes": [{"name": 5, "url": "http://a:1"}]})", "name"},
        {R"({"remotes": [{"name": "a"}]})", "url"},
        {R"({"remotes": [{"name": "a", "url": "http://a:1"}, {"name": "a", "url": "http://b:1"}]})",
         "twice"},
        {R"({"remotes": [{"name": "a", "url": "http://a:1", "token": "crt_x"}]})", "secret store"},
        {R"({"remotes": [{"name": "a", "url": "https://a:1"}]})", "fingerprint"},
        {"{\"remotes\": [{\"name\": \"\xff\xfe\", \"url\": \"http://a:1\"}]}", "remotes.json"},
    };
    for (const auto& [text, expect] : cases) {
        write(text);
        std::string err = load_error();
        EXPECT_NE(err.find(expect), std::string::npos) << "input: " << text << "\nerror: " << err;
        EXPECT_NE(err.find("remotes.json"), std::string::npos) << err;
    }
    // A huge file is refused, not read whole.
    {
        std::ofstream big(dir / "remotes.json", std::ios::binary);
        big << "{\"remotes\": [";
        std::string pad(1 << 20, ' ');
        for (int i = 0; i < 6; ++i)
            big << pad;
        big << "]}";
    }
    EXPECT_FALSE(load_error().empty());
}

// Tokens are kept per entry: two entries for one agent (two users of it) keep their own token,
// and removing one leaves the other's. A token kept per URL by an older version is adopted by
// the one entry with that URL, and by none when several share it (whose it was is unknown).
TEST_F(RemoteConfigTest, TwoEntriesForOneUrlKeepTheirOwnTokens) {
    set_environment_variable("CRUCIBLE_CONFIG_DIR", path_to_utf8(dir));
    struct Unset {
        ~Unset() { set_environment_variable("CRUCIBLE_CONFIG_DIR", ""); }
    } unset;
    RemoteConfig cfg;
    const RemoteEntry alice{"alice", "http://127.0.0.1:7443", ""};
    const RemoteEntry bob{"bob", "http://127.0.0.1:7443", ""};
    cfg.add(alice);
    cfg.add(bob);
    cfg.save(default_remotes_file());
    set_remote_token(alice, "token-a");
    set_remote_token(bob, "token-b");
    EXPECT_EQ(endpoint_for(alice).token, "token-a");
    EXPECT_EQ(endpoint_for(bob).token, "token-b");
    set_remote_token(bob, "");
    EXPECT_FALSE(remote_token(bob).has_value());
    EXPECT_EQ(endpoint_for(alice).token, "token-a");

    // A per-URL token of an older version: ambiguous while two entries share the URL...
    auto secrets = SecretStore::open_default();
    secrets->put(legacy_remote_secret_key("http://127.0.0.1:9"), "old-token");
    RemoteConfig two;
    two.add({"one", "http://127.0.0.1:9", ""});
    two.add({"two", "http://127.0.0.1:9", ""});
    two.save(default_remotes_file());
    EXPECT_FALSE(remote_token({"one", "http://127.0.0.1:9", ""}).has_value());
    // ...and adopted by the entry left alone with it.
    two.remove("two");
    two.save(default_remotes_file());
    EXPECT_EQ(remote_token({"one", "http://127.0.0.1:9", ""}).value_or(""), "old-token");
    EXPECT_FALSE(secrets->get(legacy_remote_secret_key("http://127.0.0.1:9")).has_value());
    EXPECT_EQ(secrets->get("remote:one").value_or(""), "old-token");
}

// Plain HTTP is allowed, and sends tokens without a warning, only to these.
TEST(Loopback, OnlyRealLoopbackAddressesCount) {
    for (const char* host :
         {"127.0.0.1", "127.1.2.3", "127.255.255.255", "localhost", "::1", "[::1]"})
        EXPECT_TRUE(net::is_loopback_host(host)) << host;
    for (const char* host :
         {"127.evil.example", "127.0.0.1.nip.io", "127.0.0", "127.0.0.256", "0127.0.0.1",
          "127..0.1", "128.0.0.1", "10.0.0.1", "", "localhost.evil.example", "::2", "[::1]:80",
          "127.0.0.1 ", " 127.0.0.1", "127.0.0.1."})
        EXPECT_FALSE(net::is_loopback_host(host)) << host;
}
