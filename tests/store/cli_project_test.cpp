// `crucible project ...` subcommands, run in-process: app/cli/cmd_project.cpp is compiled into
// this test with a minimal command registry (the real one lives in app/cli/main.cpp, which pulls
// in every layer and LibTorch).
#include <gtest/gtest.h>

#include <set>

#include "app/cli/command.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/store/dataset_store.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "tests/store/store_test_util.h"

namespace crucible::cli {

static std::vector<Command>& command_list() {
    static std::vector<Command> all;
    return all;
}
static std::vector<Subcommand>& sub_list() {
    static std::vector<Subcommand> all;
    return all;
}
const std::vector<Command>& commands() {
    return command_list();
}
RegisterCommand::RegisterCommand(Command c) {
    command_list().push_back(std::move(c));
}
const std::vector<Subcommand>& subcommands() {
    return sub_list();
}
RegisterSubcommand::RegisterSubcommand(Subcommand s) {
    sub_list().push_back(std::move(s));
}

namespace {

namespace fs = std::filesystem;

int project(const std::string& sub, const std::vector<std::string>& args) {
    for (const auto& s : subcommands())
        if (s.group == "project" && s.name == sub) return s.run(args);
    throw std::runtime_error("no subcommand project " + sub);
}

std::string stdout_of(const std::string& sub, const std::vector<std::string>& args) {
    testing::internal::CaptureStdout();
    try {
        project(sub, args);
    } catch (...) {
        testing::internal::GetCapturedStdout();
        throw;
    }
    return testing::internal::GetCapturedStdout();
}

TEST(CliProject, RegistersFiveSubcommands) {
    std::set<std::string> names;
    for (const auto& s : subcommands())
        if (s.group == "project") names.insert(s.name);
    EXPECT_EQ(names, (std::set<std::string>{"new", "info", "import", "export", "runs"}));
}

TEST(CliProject, NewImportInfoExportRuns) {
    store::test::TempDir dir;
    const std::string file = path_to_utf8(dir / "项目.crucible");
    EXPECT_NE(stdout_of("new", {file, "--journal", "rollback"}).find("journal delete"),
              std::string::npos);
    auto ds = store::test::make_dataset(dir / "src", 6, 64);
    data::save_detection_dataset(ds, dir / "yolo", data::DatasetFormat::Yolo);
    std::string out = stdout_of("import", {file, path_to_utf8(dir / "yolo"), "--name", "cars"});
    EXPECT_NE(out.find("imported 'cars'"), std::string::npos) << out;
    EXPECT_NE(out.find("6 images"), std::string::npos) << out;
    out = stdout_of("info", {file});
    EXPECT_NE(out.find("cars (yolo): 6 images"), std::string::npos) << out;
    EXPECT_EQ(stdout_of("runs", {file}), "no runs\n");
    {
        auto p = store::Project::open(path_from_utf8(file));
        auto run = store::create_run(*p, {.name = "r", .task = "detect.yolo"});
        Event e = make_metric(0, 3, Json{{"train/box_loss", 0.25}});
        e.seq = 0;
        store::append_events(*p, run, {e});
    }
    out = stdout_of("runs", {file});
    EXPECT_NE(out.find("detect.yolo"), std::string::npos) << out;
    out = stdout_of("runs", {file, "--run", "1"});
    EXPECT_NE(out.find("train/box_loss"), std::string::npos) << out;
    EXPECT_NE(out.find("0.25"), std::string::npos) << out;
    out = stdout_of("runs", {file, "--csv", path_to_utf8(dir / "metrics.csv"), "--per-class-csv",
                             path_to_utf8(dir / "classes.csv")});
    EXPECT_NE(out.find("metrics.csv (1 rows)"), std::string::npos) << out;
    const std::string metrics_csv = read_file_bytes(dir / "metrics.csv");
    EXPECT_EQ(metrics_csv.rfind("run_id,run,task,metric,step,epoch,time,value\n"
                                "1,r,detect.yolo,train/box_loss,3,0,",
                                0),
              0u)
        << metrics_csv;
    EXPECT_EQ(metrics_csv.substr(metrics_csv.size() - 6), ",0.25\n") << metrics_csv;
    EXPECT_EQ(read_file_bytes(dir / "classes.csv"),
              "run_id,run,epoch,step,class,name,metric,value\n");
    // Export needs real pixel sizes for VOC; YOLO does not.
    out = stdout_of("export", {file, "cars", path_to_utf8(dir / "out"), "--format", "yolo"});
    EXPECT_NE(out.find("exported 'cars'"), std::string::npos) << out;
    EXPECT_EQ(data::load_detection_dataset(dir / "out").dataset.images.size(), 6u);
}

TEST(CliProject, ClearErrors) {
    store::test::TempDir dir;
    const std::string file = path_to_utf8(dir / "p.crucible");
    EXPECT_THROW(project("info", {path_to_utf8(dir / "missing.crucible")}), InputError);
    EXPECT_THROW(project("new", {}), InputError);
    EXPECT_THROW(project("new", {file, "--bogus", "1"}), InputError);
    EXPECT_THROW(project("new", {file, "--journal", "sometimes"}), InputError);
    stdout_of("new", {file});
    EXPECT_THROW(project("new", {file}), InputError);  // exists
    EXPECT_THROW(project("export", {file, "nope", path_to_utf8(dir / "o"), "--format", "coco"}),
                 InputError);
    EXPECT_THROW(project("export", {file, "nope", path_to_utf8(dir / "o")}), InputError);
    EXPECT_THROW(project("runs", {file, "--run", "abc"}), InputError);
    EXPECT_THROW(project("import", {file, path_to_utf8(dir / "no-such-folder")}), InputError);
    {
        auto writer = store::Project::open(path_from_utf8(file));
        try {
            project("import", {file, path_to_utf8(dir.path())});
            FAIL() << "second writer accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("opened by another Crucible"), std::string::npos)
                << e.what();
        }
    }
    EXPECT_EQ(project("info", {"--help"}), 0);
}

}  // namespace
}  // namespace crucible::cli
