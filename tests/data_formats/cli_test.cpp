// End-to-end checks of `crucible dataset validate | convert | manifest | split` (the executable
// built in this build tree; skipped, with a message, when it has not been built).
#include <gtest/gtest.h>

#ifndef _WIN32  // popen/WEXITSTATUS; the Windows CI runs the CLI through its own scripts
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/base/environment.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "tests/data_formats/test_util.h"
#include "tests/support/built_programs.h"
#include "tests/support/run_command.h"

namespace crucible::data {
namespace {

namespace fs = std::filesystem;

// CRUCIBLE_CLI overrides the executable (e.g. one built elsewhere).
fs::path cli() {
    if (auto path = crucible::environment_variable("CRUCIBLE_CLI")) return *path;
    return test_support::built_program("crucible", "app/cli");
}

using test_support::shell_quote;

test_support::CommandResult run(const std::string& args) {
    return test_support::run_command(shell_quote(cli()) + " " + args);
}

class Cli : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!fs::exists(cli())) GTEST_SKIP() << "crucible executable not built at " << cli();
    }
};

TEST_F(Cli, ValidateConvertManifestSplit) {
    test::TempDir dir;
    const auto yaml =
        test::write_yolo_dataset(dir / "ds", {{"train", "a.jpg", 48, 48, "0 0.5 0.5 0.2 0.2\n"},
                                              {"train", "b.jpg", 48, 48, "1 0.5 0.5 0.3 0.3\n"},
                                              {"val", "c.jpg", 48, 48, "-"}});
    auto ok = run("dataset validate " + shell_quote(yaml));
    EXPECT_EQ(ok.code, 0) << ok.out;
    EXPECT_NE(ok.out.find("0 errors"), std::string::npos) << ok.out;

    auto json = run("dataset validate --json " + shell_quote(dir / "ds"));
    EXPECT_EQ(json.code, 0) << json.out;
    const Json report = parse_json(json.out, "validate --json");
    EXPECT_EQ(report["images"], 3);
    EXPECT_EQ(report["background_images"], 1);

    auto manifest = run("dataset manifest " + shell_quote(yaml));
    EXPECT_EQ(manifest.code, 0) << manifest.out;
    EXPECT_EQ(manifest.out.size(), 65u) << manifest.out;

    auto convert = run("dataset convert " + shell_quote(yaml) + " " + shell_quote(dir / "coco") +
                       " --to coco");
    EXPECT_EQ(convert.code, 0) << convert.out;
    auto coco_ok = run("dataset validate " + shell_quote(dir / "coco"));
    EXPECT_EQ(coco_ok.code, 0) << coco_ok.out;
    // The same dataset in another format has the same boxes; the manifest id is the same only
    // if paths match, so just check it is a valid id.
    EXPECT_EQ(run("dataset manifest " + shell_quote(dir / "coco")).out.size(), 65u);
    auto again = run("dataset convert " + shell_quote(yaml) + " " + shell_quote(dir / "coco") +
                     " --to coco");
    EXPECT_NE(again.code, 0);  // the output folder is not empty
    EXPECT_NE(again.out.find("not an empty folder"), std::string::npos) << again.out;

    auto split = run("dataset split " + shell_quote(yaml) + " " + shell_quote(dir / "split") +
                     " --val 0.34 --seed 3");
    EXPECT_EQ(split.code, 0) << split.out;
    EXPECT_NE(split.out.find("train 2, val 1"), std::string::npos) << split.out;

    test::write_bytes(dir / "ds/labels/train/a.txt", "0 0.5 0.5 0.2\n");
    auto bad = run("dataset validate " + shell_quote(yaml));
    EXPECT_EQ(bad.code, 1) << bad.out;
    EXPECT_NE(bad.out.find("labels/train/a.txt:1: error:"), std::string::npos) << bad.out;

    auto missing = run("dataset validate " + shell_quote(dir / "nothing"));
    EXPECT_EQ(missing.code, 1) << missing.out;
    EXPECT_NE(missing.out.find("does not exist"), std::string::npos) << missing.out;
}

}  // namespace
}  // namespace crucible::data
#endif  // _WIN32
