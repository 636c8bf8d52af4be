// `crucible train|val|predict|export detect` through the executable: starting from an Ultralytics
// .pt (read without Python), exporting it, validating and predicting with it, fine-tuning it on a
// dataset with another class count, the messages for bad options, and how the CLI finds the
// commands tasks register.
#include <gtest/gtest.h>

#ifndef _WIN32  // popen/WEXITSTATUS
#include <cstdio>
#include <filesystem>
#include <string>

#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/safetensors.h"
#include "core/data/per_image_report.h"
#include "core/data/synth/synth.h"
#include "plugins/detect/metrics/detection_metrics.h"
#include "tests/support/results_csv.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace crucible {
namespace {

namespace fs = std::filesystem;

using test_support::shell_quote;

// The crucible executable run in `cwd` (runs/ folders go there).
test_support::CommandResult run(const fs::path& cwd, const std::string& args) {
    std::string command = "cd ";
    command.append(shell_quote(cwd)).append(" && ").append(shell_quote(CRUCIBLE_CLI_EXE));
    command.append(" ").append(args);
    return test_support::run_command(command);
}

fs::path fixture_pt() {
    return fs::path(CRUCIBLE_FIXTURES_DIR) / "yolov8" / "yolov8n_shapes11.pt";
}

fs::path synth(const fs::path& dir, int classes, int imgsz, int train, int val) {
    data::SynthOptions o;
    o.classes = classes;
    o.imgsz = imgsz;
    o.train = train;
    o.val = val;
    o.seed = 5;
    return data::write_synth_dataset(dir, o);
}

Json json_of(const std::string& out) {
    const auto start = out.find('{');
    if (start == std::string::npos) return nullptr;
    return parse_json(out.substr(start), "output");
}

TEST(DetectCli, ExportValPredictFromAnUltralyticsCheckpoint) {
    ASSERT_TRUE(fs::exists(fixture_pt())) << fixture_pt();
    const auto dir = test_support::scratch_dir("detect_cli_pt");
    const auto yaml = synth(dir / "data", 4, 320, 4, 6);

    // export: Crucible weights that record scale and names.
    const auto exported = dir / "shapes.safetensors";
    auto e = run(
        dir, "export detect model=" + shell_quote(fixture_pt()) + " out=" + shell_quote(exported));
    ASSERT_EQ(e.code, 0) << e.out;
    const auto file = SafetensorsFile::open(exported);
    EXPECT_EQ(file.metadata().at("crucible_yolo_scale"), "n");
    EXPECT_EQ(file.metadata().at("crucible_nc"), "4");
    EXPECT_EQ(parse_json(file.metadata().at("crucible_names"), "names").size(), 4u);

    // val with the .pt and with the exported weights: the same model, the same metrics.
    auto v1 =
        run(dir, "val detect data=" + shell_quote(yaml) + " model=" + shell_quote(fixture_pt()) +
                     " imgsz=320 batch=4 json=true device=cpu");
    ASSERT_EQ(v1.code, 0) << v1.out;
    auto v2 = run(dir, "val detect data=" + shell_quote(yaml) + " model=" + shell_quote(exported) +
                           " imgsz=320 batch=4 json=true device=cpu");
    ASSERT_EQ(v2.code, 0) << v2.out;
    const Json j1 = json_of(v1.out), j2 = json_of(v2.out);
    ASSERT_TRUE(j1.is_object()) << v1.out;
    EXPECT_EQ(j1["images"].get<int>(), 6);
    EXPECT_DOUBLE_EQ(j1["metrics/mAP50-95(B)"].get<double>(),
                     j2["metrics/mAP50-95(B)"].get<double>());
    EXPECT_DOUBLE_EQ(j1["val/box_loss"].get<double>(), j2["val/box_loss"].get<double>());
    EXPECT_TRUE(j1.contains("confusion_matrix"));

    // per_image=: how each image fared; its cells add up to the confusion matrix.
    auto v3 = run(dir, "val detect data=" + shell_quote(yaml) + " model=" + shell_quote(exported) +
                           " imgsz=320 batch=4 device=cpu conf=0.001 per_image=" +
                           shell_quote(dir / "per_image.json"));
    ASSERT_EQ(v3.code, 0) << v3.out;
    const auto report =
        data::parse_per_image_report(read_json_file(dir / "per_image.json"), "per_image.json");
    ASSERT_EQ(report.images.size(), 6u);
    EXPECT_EQ(report.names.size(), 4u);
    const Json& matrix = j1["confusion_matrix"]["matrix"];
    std::vector<std::vector<long long>> summed(5, std::vector<long long>(5, 0));
    for (const auto& im : report.images) {
        EXPECT_TRUE(fs::exists(im.path)) << path_to_utf8(im.path);
        int tp = 0, wrong = 0, missed = 0, extra = 0;
        for (const auto& [pred, truth] : im.cells) {
            ++summed[static_cast<std::size_t>(pred)][static_cast<std::size_t>(truth)];
            tp += pred == truth && pred < 4;
            wrong += pred != truth && pred < 4 && truth < 4;
            missed += pred == 4;
            extra += truth == 4;
        }
        EXPECT_EQ(im.true_positives, tp);
        EXPECT_EQ(im.false_positives, extra + wrong);
        EXPECT_EQ(im.misses, missed + wrong);
        for (const auto& p : im.predictions) {
            EXPECT_GE(p.box.cx, -0.01);
            EXPECT_LE(p.box.cx, 1.01) << "normalized to the image";
        }
    }
    for (std::size_t r = 0; r < 5; ++r)
        for (std::size_t c = 0; c < 5; ++c)
            EXPECT_EQ(summed[r][c], matrix[r][c].get<long long>()) << r << "," << c;

    // predict: images with boxes and label files in the save_txt save_conf layout.
    auto p = run(dir, "predict detect source=" + shell_quote(dir / "data" / "images" / "val") +
                          " model=" + shell_quote(exported) +
                          " imgsz=320 conf=0.0001 save_txt=true name=out device=cpu");
    ASSERT_EQ(p.code, 0) << p.out;
    const auto out_dir = dir / "runs" / "detect" / "out";
    int images = 0, rows = 0;
    for (const auto& entry : fs::directory_iterator(out_dir))
        images += entry.path().extension() == ".jpg";
    EXPECT_EQ(images, 6);
    for (const auto& entry : fs::directory_iterator(out_dir / "labels")) {
        const std::string text = read_file_bytes(entry.path());
        for (std::size_t pos = 0; (pos = text.find('\n', pos)) != std::string::npos; ++pos)
            ++rows;
    }
    EXPECT_GT(rows, 0) << p.out;
    // Those files score through the prediction-folder path.
    auto s = run(dir, "val detect data=" + shell_quote(yaml) +
                          " predictions=" + shell_quote(out_dir / "labels") + " json=true");
    ASSERT_EQ(s.code, 0) << s.out;
    const Json scored = json_of(s.out);
    EXPECT_EQ(scored.at("images"), 6);
    EXPECT_EQ(scored.at("predictions"), rows);  // every written row was read back
    // The same options as --key value flags (a Boolean standing alone) give the same answer.
    auto flags = run(dir, "val detect --data " + shell_quote(yaml) + " --predictions " +
                              shell_quote(out_dir / "labels") + " --json");
    ASSERT_EQ(flags.code, 0) << flags.out;
    EXPECT_EQ(json_of(flags.out), scored);
}

// The per-image report of a detector that finds things (the suite's trained_shapes fixture):
// its true-positive flags and truth classes are mAP's own, so each class's AP50 computed from
// them alone is the AP50 `val` prints (what lets a PR-curve point trace back to its images);
// tags beside data.yaml break the metrics down as `val ... tag=` does.
TEST(DetectCli, PerImageReportHoldsMapsOwnMatchingAndTheTags) {
    const fs::path trained = CRUCIBLE_TRAINED_SHAPES_DIR;
    const auto weights = trained / "runs" / "train" / "artifacts" / "weights" / "best.safetensors";
    ASSERT_TRUE(fs::exists(weights)) << "the fixture trained_shapes did not run";
    test_support::TempDir dir("per_image");
    fs::copy(trained / "shapes", dir / "shapes", fs::copy_options::recursive);
    const auto yaml = dir / "shapes" / "data.yaml";
    const std::string common = "val detect data=" + shell_quote(yaml) +
                               " model=" + shell_quote(weights) + " imgsz=96 batch=8 device=cpu";
    auto v = run(dir, common + " json=true");
    ASSERT_EQ(v.code, 0) << v.out;
    const Json scored = json_of(v.out);
    auto p = run(dir, common + " per_image=" + shell_quote(dir / "per_image.json"));
    ASSERT_EQ(p.code, 0) << p.out;
    const auto report =
        data::parse_per_image_report(read_json_file(dir / "per_image.json"), "per_image.json");
    ASSERT_EQ(report.images.size(), 16u);
    std::vector<detect::PredictionRecord> records;
    std::vector<int> truths;
    for (const auto& im : report.images) {
        truths.insert(truths.end(), im.truth_classes.begin(), im.truth_classes.end());
        for (const auto& pr : im.predictions)
            records.push_back({static_cast<float>(pr.conf), pr.box.cls,
                               static_cast<std::uint16_t>(pr.true_at_50 ? 1 : 0)});
    }
    const auto from_flags = detect::compute_metrics(records, truths);
    const Json& per_class = scored["per_class"];
    ASSERT_EQ(from_flags.classes.size(), per_class.size());
    for (std::size_t c = 0; c < per_class.size(); ++c) {
        EXPECT_EQ(from_flags.classes[c].cls, per_class[c]["class"].get<int>());
        EXPECT_DOUBLE_EQ(from_flags.classes[c].ap[0], per_class[c]["map50"].get<double>()) << c;
        EXPECT_GT(per_class[c]["map50"].get<double>(), 0.1)
            << "the trained model finds class " << c;
    }

    // Two stations, written beside data.yaml.
    Json tags = Json::object();
    int n = 0;
    for (const auto& im : report.images)
        tags[path_to_utf8(
            fs::path(im.path.lexically_relative(yaml.parent_path()).generic_u8string()))] = {
            {"station", n++ % 2 ? "B 2" : "甲"}};
    write_file_atomically(yaml.parent_path() / "tags.json", tags.dump());
    auto t = run(dir, common + " per_image=" + shell_quote(dir / "tagged.json"));
    ASSERT_EQ(t.code, 0) << t.out;
    auto by = run(dir, common + " json=true tag=station");
    ASSERT_EQ(by.code, 0) << by.out;
    const auto tagged =
        data::parse_per_image_report(read_json_file(dir / "tagged.json"), "tagged.json");
    const Json by_tag = json_of(by.out)["by_tag"]["station"];
    ASSERT_EQ(tagged.by_tag.size(), 1u);
    ASSERT_EQ(tagged.by_tag.at("station").size(), 2u);
    ASSERT_EQ(by_tag.size(), 2u) << by.out;
    for (const auto& [value, m] : tagged.by_tag.at("station")) {
        EXPECT_EQ(m.images, 8) << value;
        EXPECT_EQ(m.instances, by_tag[value]["instances"].get<int>()) << value;
        EXPECT_DOUBLE_EQ(m.map50, by_tag[value]["metrics/mAP50(B)"].get<double>()) << value;
        EXPECT_DOUBLE_EQ(m.map50_95, by_tag[value]["metrics/mAP50-95(B)"].get<double>()) << value;
        EXPECT_GT(m.map50, 0.1) << value;
    }
}

TEST(DetectCli, FineTunesACheckpointOnAnotherClassCount) {
    ASSERT_TRUE(fs::exists(fixture_pt())) << fixture_pt();
    const auto dir = test_support::scratch_dir("detect_cli_finetune");
    const auto yaml = synth(dir / "data", 2, 96, 8, 4);
    auto t =
        run(dir, "train detect data=" + shell_quote(yaml) + " model=" + shell_quote(fixture_pt()) +
                     " epochs=1 imgsz=96 batch=4 workers=2 name=ft");
    ASSERT_EQ(t.code, 0) << t.out;
    EXPECT_NE(t.out.find("new class head for 2 classes"), std::string::npos) << t.out;
    const auto run_dir = dir / "runs" / "detect" / "ft";
    EXPECT_TRUE(fs::exists(run_dir / "results.csv"));
    const auto best = SafetensorsFile::open(run_dir / "artifacts" / "weights" / "best.safetensors");
    EXPECT_EQ(best.metadata().at("crucible_nc"), "2");
    EXPECT_EQ(best.metadata().at("crucible_names"), R"(["circle","rectangle"])");
    // A second run with the same name goes to ft2, as the yolo CLI does.
    auto again =
        run(dir, "train detect data=" + shell_quote(yaml) + " model=" + shell_quote(fixture_pt()) +
                     " epochs=1 imgsz=96 batch=4 workers=2 name=ft val=false");
    ASSERT_EQ(again.code, 0) << again.out;
    EXPECT_TRUE(fs::exists(dir / "runs" / "detect" / "ft2" / "results.csv"));
}

TEST(DetectCli, BadOptionsAreNamed) {
    const auto dir = test_support::scratch_dir("detect_cli_bad");
    const auto yaml = synth(dir / "data", 2, 64, 2, 1);
    auto no_data = run(dir, "train detect model=yolov8n epochs=1");
    EXPECT_NE(no_data.code, 0);
    EXPECT_NE(no_data.out.find("data: is required"), std::string::npos) << no_data.out;
    auto odd = run(dir, "train detect data=" + shell_quote(yaml) + " imgsz=100 epochs=1");
    EXPECT_NE(odd.code, 0);
    EXPECT_NE(odd.out.find("imgsz"), std::string::npos) << odd.out;
    EXPECT_NE(odd.out.find("multiple of 32"), std::string::npos) << odd.out;
    auto typo = run(dir, "train detect data=" + shell_quote(yaml) + " epoch=3");
    EXPECT_NE(typo.code, 0);
    EXPECT_NE(typo.out.find("epochs"), std::string::npos) << typo.out;  // did you mean
    // Flags reach the same schema and its checks.
    auto odd_flag = run(dir, "train detect --data " + shell_quote(yaml) + " --imgsz 100");
    EXPECT_NE(odd_flag.code, 0);
    EXPECT_NE(odd_flag.out.find("multiple of 32"), std::string::npos) << odd_flag.out;
    auto typo_flag = run(dir, "val detect --data " + shell_quote(yaml) + " --predictons x");
    EXPECT_NE(typo_flag.code, 0);
    EXPECT_NE(typo_flag.out.find("--predictons: unknown option"), std::string::npos)
        << typo_flag.out;
    auto bad_number = run(dir, "val detect --data " + shell_quote(yaml) + " --imgsz big");
    EXPECT_NE(bad_number.code, 0);
    EXPECT_NE(bad_number.out.find("imgsz"), std::string::npos) << bad_number.out;
    auto missing = run(dir, "val detect data=" + shell_quote(yaml) + " model=nothing_here.pt");
    EXPECT_NE(missing.code, 0);
    EXPECT_NE(missing.out.find("nothing_here.pt"), std::string::npos) << missing.out;
    auto wrong_nc =
        run(dir, "val detect data=" + shell_quote(yaml) + " model=" + shell_quote(fixture_pt()));
    EXPECT_NE(wrong_nc.code, 0);
    EXPECT_NE(wrong_nc.out.find("has 4 classes but the dataset has 2"), std::string::npos)
        << wrong_nc.out;
}

// `crucible train ... device=cpu ranks=2` ([B2 6/8]): the CLI launches two crucible-worker
// ranks over Gloo; the run folder is one run with one set of curves (one metric point per step,
// written by rank 0) and rank 1's own log. A plan that cannot run is refused by name.
TEST(DetectCli, TwoCpuRanksTrainOneRunWithOneSetOfCurves) {
    const auto dir = test_support::scratch_dir("detect_cli_ranks");
    const auto yaml = synth(dir / "data", 2, 64, 16, 4);
    auto two = run(dir, "train detect data=" + shell_quote(yaml) +
                            " model=yolov8n.yaml imgsz=64 epochs=2 batch=8 device=cpu ranks=2 "
                            "amp=false log_steps=1 dist_timeout=120");
    ASSERT_EQ(two.code, 0) << two.out;
    EXPECT_NE(two.out.find("starting 2 ranks (cpu, cpu)"), std::string::npos) << two.out;
    const fs::path run_dir = dir / "runs" / "detect" / "train";
    EXPECT_TRUE(fs::exists(run_dir / "worker.rank1.log"));
    EXPECT_EQ(test_support::read_results_csv(run_dir / "results.csv").rows.size(), 2u);
    std::vector<std::int64_t> steps;
    for (const auto& e : read_event_log(run_dir / "events.jsonl"))
        if (e.kind == "metric" && e.fields["values"].contains("train/box_loss"))
            steps.push_back(e.step());
    EXPECT_EQ(steps, (std::vector<std::int64_t>{1, 2, 3, 4})) << "2 epochs x 2 global batches";

    auto one_gpu = run(dir, "train detect data=" + shell_quote(yaml) + " device=0 ranks=2");
    EXPECT_NE(one_gpu.code, 0);
    EXPECT_NE(one_gpu.out.find("one device each"), std::string::npos) << one_gpu.out;
}

// The headless demo runs end to end (one epoch here; its default of 75 reaches mAP50 about 0.4
// in two minutes on 2 cores, measured in cmd_demo.cpp) and says what the model learned.
TEST(DetectCli, DemoTrainsAndReportsWhatTheModelLearned) {
    const auto dir = test_support::scratch_dir("detect_cli_demo");
    auto demo = run(dir, "demo --epochs 1 --dir " + shell_quote(dir / "demo") + " device=cpu");
    ASSERT_EQ(demo.code, 0) << demo.out;
    EXPECT_NE(demo.out.find("128 train / 16 val synthetic images"), std::string::npos) << demo.out;
    EXPECT_NE(demo.out.find("The trained model finds the shapes: mAP50 "), std::string::npos)
        << demo.out;
    EXPECT_NE(demo.out.find("Done. Next steps"), std::string::npos) << demo.out;
    EXPECT_TRUE(fs::exists(dir / "demo" / "runs" / "detect" / "train" / "results.csv"));
}

// Tasks own their commands (core/engine/task_commands.h): the verbs reach any task by id or
// alias, a task without the verb says so, and a task's tools are listed under its alias.
TEST(TaskCommands, VerbsAndToolsAreFoundThroughTheTasks) {
    const auto dir = test_support::scratch_dir("task_commands_cli");
    auto verbs = run(dir, "val --help");
    EXPECT_EQ(verbs.code, 0);
    EXPECT_NE(verbs.out.find("detect.yolo"), std::string::npos) << verbs.out;
    auto by_id = run(dir, "export detect.yolo --help");
    EXPECT_EQ(by_id.code, 0) << by_id.out;
    EXPECT_NE(by_id.out.find("model=WEIGHTS"), std::string::npos) << by_id.out;
    auto no_val = run(dir, "val llm data=x");
    EXPECT_NE(no_val.code, 0);
    EXPECT_NE(no_val.out.find("the task llm.lora has no val command"), std::string::npos)
        << no_val.out;
    EXPECT_NE(no_val.out.find("detect (detect.yolo)"), std::string::npos) << no_val.out;
    auto unknown = run(dir, "predict nosuchtask");
    EXPECT_NE(unknown.code, 0);
    EXPECT_NE(unknown.out.find("nosuchtask"), std::string::npos) << unknown.out;
    auto tools = run(dir, "llm --help");
    EXPECT_EQ(tools.code, 0);
    EXPECT_NE(tools.out.find("tokenize"), std::string::npos) << tools.out;
    EXPECT_NE(tools.out.find("merge"), std::string::npos) << tools.out;
    auto sd_export = run(dir, "export sd --help");
    EXPECT_EQ(sd_export.code, 0) << sd_export.out;
    EXPECT_NE(sd_export.out.find("diffusers"), std::string::npos) << sd_export.out;
    // Bare words fill a command's positionals; one too many is named.
    auto inspect = run(dir, "sd inspect no_such_lora.safetensors");
    EXPECT_NE(inspect.code, 0);
    EXPECT_NE(inspect.out.find("no_such_lora.safetensors"), std::string::npos) << inspect.out;
    auto extra = run(dir, "export sd a b c");
    EXPECT_NE(extra.code, 0);
    EXPECT_NE(extra.out.find("c: unexpected argument"), std::string::npos) << extra.out;
    auto bad_tool = run(dir, "sd nosuchtool");
    EXPECT_NE(bad_tool.code, 0);
    EXPECT_NE(bad_tool.out.find("unknown tool 'nosuchtool'"), std::string::npos) << bad_tool.out;
    auto overview = run(dir, "--help");
    EXPECT_NE(overview.out.find("tools of llm.lora"), std::string::npos) << overview.out;
}

}  // namespace
}  // namespace crucible
#endif
