// The tests' one temporary-folder fixture: unique per call and process, removed when it dies,
// also when the test that made it fails an assertion.
#include "tests/support/temp_dir.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <fstream>

namespace crucible::test_support {
namespace {

namespace fs = std::filesystem;

TEST(TempDir, EachIsNewEmptyAndGoesWithItsObject) {
    fs::path kept;
    {
        TempDir a("same");
        TempDir b("same");
        EXPECT_NE(a.path(), b.path());
        EXPECT_TRUE(fs::is_directory(a.path()));
        EXPECT_TRUE(fs::is_empty(a.path()));
        EXPECT_EQ(a.path().parent_path(), process_temp_root());
        std::ofstream(a / "模型.txt") << "x";
        EXPECT_TRUE(fs::exists(a.path() / fs::path(u8"模型.txt")));
        kept = a.path();
    }
    EXPECT_FALSE(fs::exists(kept));
    // The process's folder names the process, so two test processes never meet.
    EXPECT_NE(process_temp_root().filename().string().find("crucible-test-"), std::string::npos);
}

// A test body that fails an assertion half-way, as a failing test would.
void fails_with_a_folder(fs::path& seen) {
    TempDir dir("failing");
    seen = dir.path();
    std::ofstream(dir / "partial.bin") << "y";
    ASSERT_TRUE(false) << "planted failure";
}

TEST(TempDir, IsRemovedAfterAFailedAssertion) {
    static fs::path seen;  // EXPECT_FATAL_FAILURE's statement may use no local variable
    EXPECT_FATAL_FAILURE(fails_with_a_folder(seen), "planted failure");
    ASSERT_FALSE(seen.empty());
    EXPECT_FALSE(fs::exists(seen));
}

TEST(TempDir, ScratchFoldersAreUniqueAndLiveInTheProcessFolder) {
    const fs::path a = scratch_dir("s");
    const fs::path b = scratch_dir("s");
    EXPECT_NE(a, b);
    EXPECT_TRUE(fs::is_directory(a));
    EXPECT_EQ(a.parent_path(), process_temp_root());
}

}  // namespace
}  // namespace crucible::test_support
