// Enforces DESIGN.md's layer table on the real tree, and shows on a planted tree that the
// check does fail on violations.
#include "tests/layers/layer_rules.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/temp_dir.h"

using namespace crucible::layers;

namespace {
void write(const std::filesystem::path& p, const std::string& text) {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
}
}  // namespace

TEST(LayerRules, RealTreeHasNoViolations) {
    auto violations = check_tree(CRUCIBLE_SOURCE_DIR);
    for (const auto& v : violations)
        ADD_FAILURE() << v.file << ":" << v.line << ": #include " << v.include
                      << " breaks: " << v.rule;
    EXPECT_TRUE(violations.empty());
}

TEST(LayerRules, PlantedViolationsAreFound) {
    const crucible::test_support::TempDir plant("layer_plant");
    const std::filesystem::path root = plant.path();
    write(root / "core/base/bad.cpp", "#include <QString>\n#include <opencv2/core.hpp>\n");
    write(root / "ui/bad.cpp", "#include <torch/torch.h>\n#include \"core/engine/device.h\"\n");
    write(root / "core/data/bad.h", "  #  include \"core/store/project.h\"\n");
    write(root / "plugins/detect/bad.cpp",
          "#include \"plugins/llm_lora/x.h\"\n#include <QWidget>\n");
    write(root / "app/agent/main.cpp", "#include <ATen/ATen.h>\n");
    write(root / "core/engine/good.cpp",
          "#include <torch/torch.h>\n#include \"core/data/image_io.h\"\n");
    write(root / "core/jobs/spells.cpp",
          "auto f = dir / \"events.jsonl\";\nauto c = dir / \"checkpoints\";\n");
    write(root / "ui/spells.cpp", "download(job, \"artifacts/\" + name);\n");
    write(root / "core/base/job_folder.h", "return dir / \"spec.json\";\n");
    write(root / "ui/route.cpp", "client.get(\"/v1/jobs/\" + id);\n");
    write(root / "app/cli/route.cpp", "client.get(\"/v1/info\");\n");
    write(root / "app/cli/cmd_x.cpp", "#include \"plugins/detect/task/predictor.h\"\n");
    write(root / "core/jobs/route.cpp", "r.Get(R\"(/v1/jobs/([^/]+))\", f);\n");
    write(root / "core/net/api_routes.h", "Route kInfo{HttpMethod::Get, \"/v1/info\"};\n");
    auto v = check_tree(root);
    std::set<std::string> files;
    for (auto& x : v)
        files.insert(x.file + " " + x.include);
    EXPECT_TRUE(files.count("core/base/bad.cpp QString"));
    EXPECT_TRUE(files.count("core/base/bad.cpp opencv2/core.hpp"));
    EXPECT_TRUE(files.count("ui/bad.cpp torch/torch.h"));
    EXPECT_TRUE(files.count("ui/bad.cpp core/engine/device.h"));
    EXPECT_TRUE(files.count("core/data/bad.h core/store/project.h"));
    EXPECT_TRUE(files.count("plugins/detect/bad.cpp plugins/llm_lora/x.h"));
    EXPECT_TRUE(files.count("plugins/detect/bad.cpp QWidget"));
    EXPECT_TRUE(files.count("app/agent/main.cpp ATen/ATen.h"));
    EXPECT_TRUE(files.count("core/jobs/spells.cpp \"events.jsonl\""));
    EXPECT_TRUE(files.count("core/jobs/spells.cpp / \"checkpoints\""));
    EXPECT_TRUE(files.count("ui/spells.cpp \"artifacts/\""));
    EXPECT_TRUE(files.count("ui/route.cpp \"/v1/"));
    EXPECT_TRUE(files.count("app/cli/route.cpp \"/v1/"));
    EXPECT_TRUE(files.count("app/cli/cmd_x.cpp plugins/detect/task/predictor.h"));
    EXPECT_TRUE(files.count("core/jobs/route.cpp R\"(/v1/"));
    for (auto& x : v) {
        EXPECT_NE(x.file, "core/engine/good.cpp");
        EXPECT_NE(x.file, "core/base/job_folder.h");  // the one place that names them
        EXPECT_NE(x.file, "core/net/api_routes.h");   // the one place that names routes
    }
}
