#include "core/base/secret_store.h"
#include "core/base/environment.h"

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "tests/support/temp_dir.h"

using namespace crucible;
namespace fs = std::filesystem;

TEST(SecretStore, FileStoreKeepsSecretsOwnerOnly) {
    const test_support::TempDir scratch("secret_store");
    const auto dir = scratch.path();
    auto path = dir / "secrets.json";
    auto store = SecretStore::open_file(path);
    EXPECT_FALSE(store->get("agent:a").has_value());
    store->put("agent:a", "tok-1");
    store->put("agent:b", "tok-2");
    EXPECT_EQ(store->get("agent:a").value(), "tok-1");
#ifndef _WIN32
    // Mode bits are POSIX. Windows keeps secrets in the Credential Manager and closes folders
    // with access lists instead; the wine tests wine.secrets and wine.acl (tests/windows) check
    // those.
    EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write);
#endif
    EXPECT_TRUE(store->remove("agent:a"));
    EXPECT_FALSE(store->remove("agent:a"));
    EXPECT_FALSE(store->get("agent:a").has_value());
    // A fresh instance sees what the first one stored.
    EXPECT_EQ(SecretStore::open_file(path)->get("agent:b").value(), "tok-2");
#ifndef _WIN32  // as above: on Windows the folder's access list decides, not mode bits
    // Refuses a file that others can read.
    fs::permissions(path, fs::perms::group_read | fs::perms::others_read, fs::perm_options::add);
    EXPECT_THROW(store->get("agent:b"), Error);
#endif
}

TEST(SecretStore, ConfigDirOverride) {
    crucible::set_environment_variable("CRUCIBLE_CONFIG_DIR", "/tmp/crucible-cfg-test");
    EXPECT_EQ(user_config_dir(), std::filesystem::path("/tmp/crucible-cfg-test"));
    crucible::unset_environment_variable("CRUCIBLE_CONFIG_DIR");
}
