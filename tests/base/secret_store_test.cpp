#include "core/base/secret_store.h"
#include "core/base/environment.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "core/base/error.h"
#include "tests/support/temp_dir.h"

using namespace crucible;

TEST(SecretStore, FileStoreKeepsSecretsOwnerOnly) {
    const test_support::TempDir scratch("secret_store");
    const auto dir = scratch.path();
    auto path = dir / "secrets.json";
    auto store = SecretStore::open_file(path);
    EXPECT_FALSE(store->get("agent:a").has_value());
    store->put("agent:a", "tok-1");
    store->put("agent:b", "tok-2");
    EXPECT_EQ(store->get("agent:a").value(), "tok-1");
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_TRUE(store->remove("agent:a"));
    EXPECT_FALSE(store->remove("agent:a"));
    EXPECT_FALSE(store->get("agent:a").has_value());
    // A fresh instance sees what the first one stored.
    EXPECT_EQ(SecretStore::open_file(path)->get("agent:b").value(), "tok-2");
    // Refuses a file that others can read.
    ::chmod(path.c_str(), 0644);
    EXPECT_THROW(store->get("agent:b"), Error);
}

TEST(SecretStore, ConfigDirOverride) {
    crucible::set_environment_variable("CRUCIBLE_CONFIG_DIR", "/tmp/crucible-cfg-test");
    EXPECT_EQ(user_config_dir(), std::filesystem::path("/tmp/crucible-cfg-test"));
    crucible::unset_environment_variable("CRUCIBLE_CONFIG_DIR");
}
