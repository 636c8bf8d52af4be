// Prediction/label file parsing (hostile input table), folder scoring and `crucible val detect`.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "plugins/detect/metrics/prediction_folder.h"
#include "tests/support/built_programs.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace crucible::detect {
namespace {

namespace fs = std::filesystem;

using test_support::TempDir;

void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
}

// ---- parsing -----------------------------------------------------------------------------------

TEST(PredictionText, ParsesRowsBomCrlfAndBlankLines) {
    std::vector<TextProblem> problems;
    const auto rows = parse_prediction_text(
        "\xEF\xBB\xBF"
        "0 0.5 0.5 0.2 0.1 0.9\r\n\n  3 0.1 0.2 0.05 0.05 1e-3 \r\n",
        "p.txt", 4, problems);
    EXPECT_TRUE(problems.empty());
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].cls, 0);
    EXPECT_DOUBLE_EQ(rows[0].w, 0.2);
    EXPECT_FLOAT_EQ(rows[0].conf, 0.9f);
    EXPECT_EQ(rows[1].cls, 3);
    EXPECT_FLOAT_EQ(rows[1].conf, 0.001f);
}

TEST(PredictionText, BadLinesAreReportedWithFileAndLine) {
    struct Case {
        const char* text;
        const char* expect;  // part of the message
    };
    const Case cases[] = {
        {"0 0.5 0.5 0.2 0.1", "expected 6 values"},        // truncated row (a label row)
        {"0 0.5 0.5 0.2 0.1 0.9 7", "expected 6 values"},  // extra value
        {"a 0.5 0.5 0.2 0.1 0.9", "is not a number"},
        {"1.5 0.5 0.5 0.2 0.1 0.9", "not a whole number"},
        {"-1 0.5 0.5 0.2 0.1 0.9", "negative"},
        {"9 0.5 0.5 0.2 0.1 0.9", "not below the class count 4"},
        {"0 nan 0.5 0.2 0.1 0.9", "is not a number"},
        {"0 0.5 inf 0.2 0.1 0.9", "is not a number"},
        {"0 0.5 0.5 -0.2 0.1 0.9", "must not be negative"},
        {"0 1.5 0.5 0.2 0.1 0.9", "outside [0, 1]"},
        {"0 0.5 0.5 0.2 0.1 1.5", "confidence outside"},
        {"0 0.5 0.5 0.2 0.1 0x1", "is not a number"},
        {"0 0.5 0.5 0.2 0.1 \xFF\xFE", "is not a number"},         // not UTF-8
        {"0 0.5 0.5 0.2 0.1 0.9\xE4\xB8\xAD", "is not a number"},  // Chinese glued to a number
        {"99999999999999999999 0.5 0.5 0.2 0.1 0.9", "not a whole number"},
        {"0 1e999 0.5 0.2 0.1 0.9", "is not a number"},
        {"0 0.5 0.5 0.2 0.1 +", "is not a number"},
        {"0 0.5 0.5 0.2 0.1 ++1", "is not a number"},
    };
    for (const auto& c : cases) {
        std::vector<TextProblem> problems;
        const std::string text = std::string("0 0.5 0.5 0.2 0.1 0.9\n") + c.text + "\n";
        const auto rows = parse_prediction_text(text, "dir/img.txt", 4, problems);
        ASSERT_EQ(problems.size(), 1u) << c.text;
        EXPECT_EQ(problems[0].where, "dir/img.txt:2") << c.text;
        EXPECT_NE(problems[0].what.find(c.expect), std::string::npos)
            << c.text << " -> " << problems[0].what;
        EXPECT_EQ(rows.size(), 1u) << c.text;  // the good row is still read
    }
}

TEST(PredictionText, HugeLineIsRejectedNotCrashing) {
    std::string line = "0";
    for (int i = 0; i < 200000; ++i)
        line += " 0.5";
    std::vector<TextProblem> problems;
    EXPECT_TRUE(parse_prediction_text(line, "big.txt", 0, problems).empty());
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].what.find("found 200001"), std::string::npos);
    problems.clear();
    EXPECT_TRUE(parse_prediction_text(std::string(100000, 'x'), "junk.txt", 0, problems).empty());
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_LT(problems[0].what.size(), 200u);  // the token is cut in the message
}

TEST(LabelText, RowsAndPolygons) {
    std::vector<TextProblem> problems;
    const auto boxes =
        parse_label_text("1 0.5 0.5 0.2 0.4\n2 0.1 0.1 0.3 0.1 0.3 0.5\n", "l.txt", 0, problems);
    EXPECT_TRUE(problems.empty());
    ASSERT_EQ(boxes.size(), 2u);
    EXPECT_EQ(boxes[1].cls, 2);
    EXPECT_DOUBLE_EQ(boxes[1].cx, 0.2);
    EXPECT_DOUBLE_EQ(boxes[1].h, 0.4);
    problems.clear();
    parse_label_text("0 0.5 0.5 0.2 0.1 0.9\n0 0.5 0.5 0 0.1\n", "l.txt", 0, problems);
    ASSERT_EQ(problems.size(), 2u);
    EXPECT_EQ(problems[0].where, "l.txt:1");
    EXPECT_EQ(problems[1].where, "l.txt:2");
}

// ---- folders -----------------------------------------------------------------------------------

TEST(PredictionFolder, MissingFileMeansNoPredictionsAndExtraFilesAreListed) {
    TempDir t;
    write(t.path() / "labels/a.txt", "0 0.5 0.5 0.2 0.2\n");
    write(t.path() / "labels/b.txt", "0 0.3 0.3 0.2 0.2\n");
    write(t.path() / "labels/classes.txt", "cat\n\n");
    write(t.path() / "pred/a.txt", "0 0.5 0.5 0.2 0.2 0.9\n");
    write(t.path() / "pred/zzz.txt", "0 0.5 0.5 0.2 0.2 0.9\n");  // no such image
    const auto ds = load_label_folder(t.path() / "labels");
    ASSERT_EQ(ds.images.size(), 2u);
    ASSERT_EQ(ds.class_names, std::vector<std::string>{"cat"});
    const auto r = evaluate_prediction_folder(ds, t.path() / "pred");
    EXPECT_EQ(r.prediction_files, 1);
    EXPECT_EQ(r.unmatched_files, std::vector<std::string>{"zzz.txt"});
    EXPECT_EQ(r.metrics.images, 2);
    EXPECT_EQ(r.metrics.instances, 2);
    EXPECT_NEAR(r.metrics.recall, 0.5, 1e-9);  // b has no prediction file
    const Json j = prediction_folder_json(r);
    EXPECT_EQ(j.at("per_class")[0].at("name"), "cat");
    EXPECT_EQ(j.at("confusion_matrix").at("matrix")[1][0], 1);  // b missed
}

TEST(PredictionFolder, UsesTheLabelsSubfolderOfARunFolder) {
    TempDir t;
    write(t.path() / "gt/x.txt", "0 0.5 0.5 0.2 0.2\n");
    write(t.path() / "run/labels/x.txt", "0 0.5 0.5 0.2 0.2 0.9\n");
    const auto r = evaluate_prediction_folder(load_label_folder(t.path() / "gt"), t.path() / "run");
    EXPECT_EQ(r.prediction_files, 1);
    EXPECT_NEAR(r.metrics.map50, 0.995, 1e-12);
}

TEST(PredictionFolder, ChineseNames) {
    TempDir t;
    const fs::path name = path_from_utf8("\xE5\x9B\xBE\xE7\x89\x87.txt");  // 图片.txt
    write(t.path() / "gt" / name, "0 0.5 0.5 0.2 0.2\n");
    write(t.path() / "pred" / name, "0 0.5 0.5 0.2 0.2 0.9\n");
    const auto r =
        evaluate_prediction_folder(load_label_folder(t.path() / "gt"), t.path() / "pred");
    EXPECT_EQ(r.prediction_files, 1);
    EXPECT_NEAR(r.metrics.map50, 0.995, 1e-12);
}

TEST(PredictionFolder, BadLinesInSeveralFilesAreAllReported) {
    TempDir t;
    write(t.path() / "gt/a.txt", "0 0.5 0.5 0.2 0.2\n");
    write(t.path() / "gt/b.txt", "0 0.5 0.5 0.2 0.2\n");
    write(t.path() / "pred/a.txt", "0 0.5 0.5 0.2 0.2 0.9\n0 0.5 0.5 0.2\n");
    write(t.path() / "pred/b.txt", "x 0.5 0.5 0.2 0.2 0.9\n");
    try {
        evaluate_prediction_folder(load_label_folder(t.path() / "gt"), t.path() / "pred");
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("a.txt:2"), std::string::npos) << msg;
        EXPECT_NE(msg.find("b.txt:1"), std::string::npos) << msg;
        EXPECT_NE(msg.find("2 bad lines"), std::string::npos) << msg;
    }
}

TEST(PredictionFolder, RefusesWhatIsNotAFolderAndSharedStems) {
    TempDir t;
    write(t.path() / "gt/a.txt", "0 0.5 0.5 0.2 0.2\n");
    EXPECT_THROW(evaluate_prediction_folder(load_label_folder(t.path() / "gt"), t.path() / "nope"),
                 InputError);
    EXPECT_THROW(load_label_folder(t.path() / "gt/a.txt"), InputError);
    data::DetectionDataset ds;
    ds.images.resize(2);
    ds.images[0].path = "train/x.jpg";
    ds.images[1].path = "more/x.png";
    try {
        evaluate_prediction_folder(ds, t.path() / "gt");
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("cannot be told apart"), std::string::npos);
    }
    write(t.path() / "bad/l.txt", "0 0.5 0.5 0.2\n");
    EXPECT_THROW(load_label_folder(t.path() / "bad"), InputError);
}

TEST(PredictionFolder, SplitAndTagsOfADataset) {
    TempDir t;
    write(t.path() / "pred/v1.txt", "0 0.5 0.5 0.2 0.2 0.9\n");
    write(t.path() / "pred/v2.txt", "0 0.1 0.1 0.1 0.1 0.9\n");  // misses
    data::DetectionDataset ds;
    ds.class_names = {"a"};
    auto add = [&](const char* path, const char* split, const char* station) {
        data::ImageRecord r;
        r.path = path;
        r.split = split;
        r.width = 640;
        r.height = 480;
        r.boxes.push_back({0, 0.5, 0.5, 0.2, 0.2});
        r.tags["station"] = station;
        ds.images.push_back(r);
    };
    add("images/v1.jpg", "val", "1");
    add("images/v2.jpg", "val", "2");
    add("images/t1.jpg", "train", "1");
    PredictionFolderOptions o;
    o.split = "val";
    o.tag_key = "station";
    const auto r = evaluate_prediction_folder(ds, t.path() / "pred", o);
    EXPECT_EQ(r.metrics.images, 2);
    ASSERT_EQ(r.by_tag.size(), 2u);
    EXPECT_NEAR(r.by_tag.at("1").map50, 0.995, 1e-12);
    EXPECT_EQ(r.by_tag.at("2").map50, 0.0);
    const Json j = prediction_folder_json(r, "station");
    EXPECT_TRUE(j.at("by_tag").at("station").contains("1"));
}

// ---- the CLI -----------------------------------------------------------------------------------
#ifndef _WIN32  // runs the built binary through popen (tests/support)

test_support::CommandResult run_cli(const std::string& args) {
    const fs::path exe = test_support::built_program("crucible", "app/cli");
    if (!fs::exists(exe)) return {};
    return test_support::run_command(test_support::shell_quote(exe) + " " + args);
}

const fs::path kMapDir = fs::path(CRUCIBLE_FIXTURES_DIR) / "map";

TEST(ValCli, FixtureAsJson) {
    if (!fs::exists(kMapDir / "expected.json")) GTEST_SKIP() << "no " << kMapDir;
    const auto r =
        run_cli("val detect labels='" + (kMapDir / "labels").string() + "' predictions='" +
                (kMapDir / "predictions").string() + "' imgsz=320 json=true");
    ASSERT_EQ(r.code, 0) << r.out;
    const Json got = parse_json(r.out, "crucible val output");
    const Json expected = read_json_file(kMapDir / "expected.json");
    for (const char* key : {"metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)",
                            "metrics/mAP50-95(B)", "fitness"})
        EXPECT_NEAR(got.at(key).get<double>(), expected.at(key).get<double>(), 1e-6) << key;
    ASSERT_EQ(got.at("per_class").size(), 4u);
    for (std::size_t c = 0; c < 4; ++c) {
        EXPECT_NEAR(got.at("per_class")[c].at("map50").get<double>(),
                    expected.at("per_class_ap50")[c].get<double>(), 1e-6);
        EXPECT_NEAR(got.at("per_class")[c].at("map50_95").get<double>(),
                    expected.at("per_class_ap50_95")[c].get<double>(), 1e-6);
    }
}

TEST(ValCli, TableBadInputAndModelNeedsData) {
    if (!fs::exists(kMapDir / "expected.json")) GTEST_SKIP() << "no " << kMapDir;
    const std::string labels = "labels='" + (kMapDir / "labels").string() + "' ";
    auto table = run_cli("val detect " + labels + "predictions='" +
                         (kMapDir / "predictions").string() + "'");
    ASSERT_EQ(table.code, 0) << table.out;
    EXPECT_NE(table.out.find("mAP50-95)"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("all"), std::string::npos);
    EXPECT_NE(table.out.find("0.768"), std::string::npos) << table.out;  // mAP50 of the fixture

    TempDir t;
    write(t.path() / "p/val_00000.txt", "0 0.5 0.5 0.2 0.2 0.9\n0 0.5 oops 0.2 0.2 0.9\n");
    auto bad = run_cli("val detect " + labels + "predictions='" + (t.path() / "p").string() + "'");
    EXPECT_EQ(bad.code, 1) << bad.out;
    EXPECT_NE(bad.out.find("val_00000.txt:2"), std::string::npos) << bad.out;

    // model= validates a model on a dataset: it needs data= (a label folder has no images).
    auto model = run_cli("val detect " + labels + "model=yolov8n.safetensors");
    EXPECT_EQ(model.code, 1);
    EXPECT_NE(model.out.find("data: is required with model="), std::string::npos) << model.out;

    auto unknown = run_cli("val detect " + labels + "predictions=x imgsz=abc");
    EXPECT_EQ(unknown.code, 1);
    EXPECT_NE(unknown.out.find("imgsz"), std::string::npos) << unknown.out;

    auto task = run_cli("val segment");
    EXPECT_EQ(task.code, 1);
    EXPECT_NE(task.out.find("unknown task"), std::string::npos) << task.out;
}

#endif  // _WIN32

}  // namespace
}  // namespace crucible::detect
