// Whole runs of the toy task in this process: learning, events, results.csv, weights provenance,
// schedule values in the events, accumulation, optimizer=auto, early stopping, stop requests,
// non-finite loss, option errors, extending and fine-tuning.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/base/event_inbox.h"
#include "core/base/file_io.h"
#include "core/engine/checkpoint_file.h"
#include "core/engine/checkpoint_store.h"
#include "core/engine/host_read.h"
#include "core/engine/optimizer_factory.h"
#include "core/engine/optimizer_state.h"
#include "core/engine/schedule.h"
#include "core/engine/stop_control.h"
#include "core/engine/task.h"
#include "core/engine/tensor_state.h"
#include "core/engine/trainer.h"
#include "core/engine/weights_file.h"
#include "tests/engine/test_util.h"
#include "tests/engine/toy_task.h"

namespace crucible::engine {
namespace {

using namespace testing;

Json base_options() {
    return {{"epochs", 4},  {"batch", 8},     {"samples", 48},
            {"workers", 1}, {"log_steps", 2}, {"seed", 3}};
}

std::vector<Event> of_kind(const std::vector<Event>& events, const std::string& kind) {
    std::vector<Event> out;
    for (const auto& e : events)
        if (e.kind == kind) out.push_back(e);
    return out;
}

const Event& last_status(const std::vector<Event>& events) {
    for (auto it = events.rbegin(); it != events.rend(); ++it)
        if (it->kind == "status") return *it;
    throw std::runtime_error("no status event");
}

TEST(EngineRun, LearnsAndWritesEventsResultsAndWeights) {
    const auto dir = fresh_dir("learn");
    Json o = base_options();
    o["epochs"] = 6;
    write_toy_spec(dir, o);
    ASSERT_EQ(run_in_process(dir), worker_exit_code(JobState::Succeeded));

    const auto csv = csv_of(dir, /*drop_time=*/false);
    ASSERT_EQ(csv.size(), 7u);
    EXPECT_EQ(csv[0],
              (std::vector<std::string>{"epoch", "time", "train/mse_loss", "metrics/neg_mse",
                                        "val/mse_loss", "lr/pg0", "lr/pg1", "lr/pg2"}));
    EXPECT_EQ(csv[1][0], "1");
    EXPECT_EQ(csv[6][0], "6");
    EXPECT_LT(std::stod(csv[6][2]), 0.5 * std::stod(csv[1][2])) << "training loss did not fall";
    EXPECT_LT(std::stod(csv[6][4]), std::stod(csv[1][4])) << "validation loss did not fall";

    const auto events = events_of(dir);
    for (std::size_t i = 0; i < events.size(); ++i)
        EXPECT_EQ(events[i].seq, static_cast<std::int64_t>(i));
    for (const auto& e : events)
        EXPECT_TRUE(is_known_event_kind(e.kind)) << e.kind;
    const auto statuses = of_kind(events, "status");
    ASSERT_GE(statuses.size(), 2u);
    EXPECT_EQ(statuses.front().fields["state"], "running");
    EXPECT_EQ(events.back().kind, "status");
    EXPECT_EQ(events.back().fields["state"], "succeeded");
    EXPECT_EQ(events.back().fields["reason"], "finished");
    const auto evals = of_kind(events, "eval");
    ASSERT_EQ(evals.size(), 6u);
    EXPECT_TRUE(evals[0].fields["values"].contains("metrics/neg_mse"));
    EXPECT_TRUE(evals[0].fields["per_class"].is_array());
    EXPECT_EQ(evals[5].fields["epoch"], 6);
    EXPECT_EQ(evals[5].fields["step"], 36);  // 6 batches per epoch
    const auto progress = of_kind(events, "progress");
    ASSERT_FALSE(progress.empty());
    EXPECT_EQ(progress.back().fields["total_steps"], 36);
    EXPECT_EQ(progress.back().fields["epochs"], 6);
    EXPECT_EQ(progress.back().fields["epoch"], 6);  // from 1: the last epoch is 6 of 6
    EXPECT_EQ(progress.front().fields["epoch"], 1);
    // One train point per step: the end of an epoch adds none where its last step was reported.
    std::set<std::int64_t> steps;
    for (const auto& m : of_kind(events, "metric")) {
        if (!m.fields["values"].contains("train/mse_loss")) continue;
        EXPECT_TRUE(steps.insert(m.fields["step"].get<std::int64_t>()).second)
            << "two train points at step " << m.fields["step"];
    }
    EXPECT_TRUE(steps.count(36));
    EXPECT_GE(of_kind(events, "checkpoint").size(), 6u);
    bool has_step_metric = false;
    for (const auto& m : of_kind(events, "metric"))
        has_step_metric |= m.fields["step"] == 2 && m.fields["values"].contains("train/mse_loss");
    EXPECT_TRUE(has_step_metric);

    for (const char* name : {"best", "last"}) {
        const auto meta = read_safetensors_metadata(dir / "artifacts" / "weights" /
                                                    (std::string(name) + ".safetensors"));
        EXPECT_EQ(meta.at("crucible_version"), CRUCIBLE_VERSION);
        EXPECT_EQ(meta.at("crucible_task"), "toy.regression");
        EXPECT_EQ(meta.at("crucible_seed"), "3");
        EXPECT_EQ(meta.at("crucible_device"), "cpu");
        EXPECT_EQ(meta.at("crucible_dataset_sha256"), "toy-3");
        EXPECT_EQ(meta.at("crucible_config_sha256"),
                  config_hash(parse_json(meta.at("crucible_config"), "meta")));
        EXPECT_EQ(meta.at("format"), "pt");
    }
    for (const char* f : {"spec.json", "events.jsonl", "worker.log", "results.csv"})
        EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
    EXPECT_TRUE(std::filesystem::is_directory(dir / "checkpoints"));
    EXPECT_TRUE(std::filesystem::exists(dir / "checkpoints" / "best.ckpt"));
    // best.ckpt is a second name of the step checkpoint of the best epoch (a link, not a second
    // write): valid, and at the step its `checkpoint` event names.
    std::int64_t best_step = -1;
    for (const auto& c : of_kind(events, "checkpoint"))
        if (c.fields.value("name", std::string()) == "best")
            best_step = c.fields["step"].get<std::int64_t>();
    ASSERT_GE(best_step, 0);
    const auto best = decode_checkpoint(read_file_bytes(dir / "checkpoints" / "best.ckpt"), "best");
    EXPECT_EQ(best.meta.at("step").get<std::int64_t>(), best_step);
    std::filesystem::remove_all(dir);
}

TEST(EngineRun, AppendsEventsPostedToTheInboxWithGapFreeSeq) {
    // The agent posts alarms to <job>/inbox while the worker owns events.jsonl; the worker
    // appends them between steps (and before its final status) with its own writer.
    const auto dir = fresh_dir("inbox");
    write_toy_spec(dir, base_options());
    post_to_job_inbox(dir, make_alarm("gpu_temperature", "GPU 0 at 91 C"));
    post_to_job_inbox(dir, make_alarm("gpu_idle", "GPU 0 idle for 120 s"));
    std::filesystem::create_directories(job_inbox(dir));
    write_file_atomically(job_inbox(dir) / "99999999999999999999-00000000.json", "{not json");
    ASSERT_EQ(run_in_process(dir), worker_exit_code(JobState::Succeeded));
    const auto events = events_of(dir);
    for (std::size_t i = 0; i < events.size(); ++i)
        ASSERT_EQ(events[i].seq, static_cast<std::int64_t>(i));
    const auto alarms = of_kind(events, "alarm");
    ASSERT_EQ(alarms.size(), 2u);
    EXPECT_EQ(alarms[0].fields.value("alarm", ""), "gpu_temperature");
    EXPECT_EQ(alarms[1].fields.value("alarm", ""), "gpu_idle");
    EXPECT_LT(alarms[0].seq, alarms[1].seq);
    EXPECT_FALSE(std::filesystem::exists(job_inbox(dir) / "99999999999999999999-00000000.json"));
    EXPECT_TRUE(std::filesystem::exists(job_inbox(dir) / "99999999999999999999-00000000.json.bad"));
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(job_inbox(dir)))
        files += e.path().extension() == ".json";
    EXPECT_EQ(files, 0);
}

TEST(EngineRun, WarmupLrAndMomentumValuesInStepMetrics) {
    const auto dir = fresh_dir("warmup");
    Json o = base_options();
    o["epochs"] = 10;
    o["log_steps"] = 1;
    o["warmup_epochs"] = 1.0;  // 6 batches per epoch -> max(round(6), 100) = 100 warmup iterations
    o["lr0"] = 0.05;
    write_toy_spec(dir, o);
    ASSERT_EQ(run_in_process(dir), worker_exit_code(JobState::Succeeded));
    std::map<std::int64_t, Json> by_step;
    for (const auto& m : of_kind(events_of(dir), "metric"))
        by_step[m.fields["step"].get<std::int64_t>()] = m.fields["values"];
    // step s is iteration ni = s - 1; epoch = ni / 6.
    auto expect_at = [&](std::int64_t step) {
        const std::int64_t ni = step - 1;
        const int epoch = static_cast<int>(ni / 6);
        const double target = 0.05 * lr_factor(epoch, 10, 0.01, false);
        const double x = static_cast<double>(ni) / 100.0;
        ASSERT_TRUE(by_step.count(step));
        EXPECT_NEAR(by_step[step]["lr/pg0"].get<double>(), 0.1 + x * (target - 0.1), 1e-12) << step;
        EXPECT_NEAR(by_step[step]["lr/pg1"].get<double>(), x * target, 1e-12) << step;
    };
    expect_at(1);
    expect_at(20);
    expect_at(51);
    // Warmup (100 iterations) outlasts the 60-step run: at the end the LR is still ramping.
    EXPECT_LT(by_step[60]["lr/pg1"].get<double>(), 0.05 * lr_factor(9, 10, 0.01, false));
    std::filesystem::remove_all(dir);
}

TEST(EngineRun, AccumulationStepsAndEmaUpdatesMatchNbsRule) {
    const auto dir = fresh_dir("accumulate");
    Json o = base_options();
    o["epochs"] = 2;
    o["nbs"] = 24;  // batch 8 -> accumulate 3; 12 iterations -> optimizer steps at ni 2, 5, 8, 11
    write_toy_spec(dir, o);
    ASSERT_EQ(run_in_process(dir), worker_exit_code(JobState::Succeeded));
    CheckpointStore store(dir / "checkpoints", 3);
    std::vector<std::string> rejected;
    const auto loaded = store.load_newest_valid(rejected);
    ASSERT_TRUE(loaded);
    EXPECT_EQ(loaded->data.meta["step"], 12);
    EXPECT_EQ(loaded->data.meta["ema_updates"], 4);
    EXPECT_EQ(loaded->data.meta["last_opt_step"], 11);
    std::filesystem::remove_all(dir);
}

TEST(EngineRun, AutoOptimizerPicksAdamWForShortRuns) {
    const auto dir = fresh_dir("auto");
    Json o = base_options();
    o["optimizer"] = "auto";
    o["epochs"] = 1;
    write_toy_spec(dir, o);
    ASSERT_EQ(run_in_process(dir), worker_exit_code(JobState::Succeeded));
    bool logged = false;
    for (const auto& e : of_kind(events_of(dir), "log"))
        logged |= e.fields["message"].get<std::string>().find("optimizer AdamW(lr=0.002") !=
                  std::string::npos;
    EXPECT_TRUE(logged) << "nc=1: round(0.002*5/5, 6) = 0.002";
    const auto metrics = of_kind(events_of(dir), "metric");
    EXPECT_NEAR(metrics.back().fields["values"]["lr/pg1"].get<double>(), 0.002, 1e-15);
    std::filesystem::remove_all(dir);
}

TEST(EngineRun, EarlyStoppingAfterPatienceEpochs) {
    const auto dir = fresh_dir("patience");
    Json o = base_options();
    o["epochs"] = 10;
    o["patience"] = 2;
    o["fitness"] = "decreasing";  // epoch 1 is the best; epochs 2 and 3 do not improve
    write_toy_spec(dir, o);
    ASSERT_EQ(run_in_process(dir), worker_exit_code(JobState::Succeeded));
    EXPECT_EQ(csv_of(dir).size(), 4u);  // header + 3 epochs
    const auto status = last_status(events_of(dir));
    EXPECT_EQ(status.fields["state"], "succeeded");
    EXPECT_NE(status.fields["reason"].get<std::string>().find("early stopping"), std::string::npos);
    const auto best = read_safetensors_metadata(dir / "artifacts" / "weights" / "best.safetensors");
    EXPECT_EQ(best.at("crucible_epoch"), "1");
    std::filesystem::remove_all(dir);
}

// Runs the toy task with `option` = `step` (a planted failure) and checks that the run failed
// with exactly one `alarm`, a reason containing `reason`, and its log tail.
void expect_failure_with_alarm(const std::string& name, const char* option, int step,
                               const std::string& alarm, const std::string& reason) {
    const auto dir = fresh_dir(name);
    Json o = base_options();
    o[option] = step;
    write_toy_spec(dir, o);
    EXPECT_EQ(run_in_process(dir), worker_exit_code(JobState::Failed));
    const auto events = events_of(dir);
    const auto alarms = of_kind(events, "alarm");
    ASSERT_EQ(alarms.size(), 1u);
    EXPECT_EQ(alarms[0].fields["alarm"], alarm);
    const auto status = last_status(events);
    EXPECT_EQ(status.fields["state"], "failed");
    const std::string text = status.fields["reason"].get<std::string>();
    EXPECT_NE(text.find(reason), std::string::npos) << text;
    EXPECT_TRUE(status.fields["log_tail"].is_array());
    std::filesystem::remove_all(dir);
}

TEST(EngineRun, NonFiniteLossFailsWithAlarm) {
    expect_failure_with_alarm("nan", "nan_at_step", 3, "non_finite_loss", "non-finite loss");
}

// A step never waits for the device: loss values are read once per report, epoch end or
// checkpoint (each read is a device synchronisation on CUDA), not once per step.
TEST(EngineRun, HostReadsArePerReportNotPerStep) {
    const auto dir = fresh_dir("host_reads");
    Json o = base_options();
    o["samples"] = 96;  // 12 steps an epoch
    o["epochs"] = 2;
    o["log_steps"] = 1000;
    o["grad_clip"] = 10.0;
    write_toy_spec(dir, o);
    const auto before = host_read_count();
    EXPECT_EQ(run_in_process(dir), worker_exit_code(JobState::Succeeded));
    const auto reads = host_read_count() - before;
    // Per epoch: its last step's report, the epoch's results row and its checkpoint.
    EXPECT_LE(reads, 3u * 2u) << "24 steps";
    EXPECT_GE(reads, 2u);
    std::filesystem::remove_all(dir);
}

// amp_dtype=bf16 puts a CPU run's forward and loss under bf16 autocast and says so in the log;
// the defaults (amp on, fp16) leave a CPU run in fp32.
TEST(EngineRun, Bf16AmpOnTheCpuOnlyWhenAskedForAndLogged) {
    for (const bool bf16 : {false, true}) {
        SCOPED_TRACE(bf16);
        const auto dir = fresh_dir(bf16 ? "amp_bf16" : "amp_default");
        Json o = base_options();
        o["epochs"] = 1;
        if (bf16) o["amp_dtype"] = "bf16";
        write_toy_spec(dir, o);
        const auto before = toy::cpu_bf16_steps();
        ASSERT_EQ(run_in_process(dir), worker_exit_code(JobState::Succeeded));
        EXPECT_EQ(toy::cpu_bf16_steps() - before, bf16 ? 6 : 0);  // 48 samples, batch 8
        bool logged = false;
        for (const auto& e : of_kind(events_of(dir), "log"))
            logged = logged || e.fields.value("message", std::string()).find("(AMP bf16)") !=
                                   std::string::npos;
        EXPECT_EQ(logged, bf16);
        std::filesystem::remove_all(dir);
    }
}

TEST(EngineRun, OutOfMemoryFailsTheRunWithAnAlarm) {
    expect_failure_with_alarm("oom", "oom_at_step", 2, "out_of_memory",
                              "out of memory at batch size 8 on cpu");
}

TEST(EngineRun, BadOptionFailsNamingTheOption) {
    const auto dir = fresh_dir("badopt");
    Json o = base_options();
    o["epochs"] = "many";
    write_toy_spec(dir, o);
    EXPECT_EQ(run_in_process(dir), worker_exit_code(JobState::Failed));
    const auto status = last_status(events_of(dir));
    EXPECT_EQ(status.fields["state"], "failed");
    EXPECT_NE(status.fields["reason"].get<std::string>().find("epochs"), std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST(EngineRun, CancelRequestEndsCleanly) {
    const auto dir = fresh_dir("cancel");
    write_toy_spec(dir, base_options());
    write_stop_request(JobFolder{dir}, StopRequest::Cancel);
    EXPECT_EQ(run_in_process(dir), worker_exit_code(JobState::Canceled));
    const auto status = last_status(events_of(dir));
    EXPECT_EQ(status.fields["state"], "canceled");
    EXPECT_EQ(status.fields["step"], 1);
    EXPECT_FALSE(std::filesystem::exists(dir / "control.json"));  // consumed
    std::filesystem::remove_all(dir);
}

TEST(EngineRun, PauseThenResumeEqualsUninterruptedRun) {
    const auto ref = fresh_dir("pause_ref");
    const auto dir = fresh_dir("pause");
    Json o = base_options();
    o["nbs"] = 24;  // pause lands inside an accumulation window
    write_toy_spec(ref, o);
    write_toy_spec(dir, o);
    ASSERT_EQ(run_in_process(ref), worker_exit_code(JobState::Succeeded));
    write_stop_request(JobFolder{dir}, StopRequest::Pause);
    EXPECT_EQ(run_in_process(dir), worker_exit_code(JobState::Paused));
    EXPECT_EQ(last_status(events_of(dir)).fields["state"], "paused");
    EXPECT_EQ(CheckpointStore(dir / "checkpoints", 3).step_files().size(), 1u);
    ASSERT_EQ(run_in_process(dir, /*resume=*/true), worker_exit_code(JobState::Succeeded));
    EXPECT_EQ(weights_sha(dir), weights_sha(ref));
    EXPECT_EQ(csv_of(dir), csv_of(ref));
    const auto rollbacks = of_kind(events_of(dir), "rollback");
    ASSERT_EQ(rollbacks.size(), 1u);
    EXPECT_EQ(rollbacks[0].fields["to_step"], 1);
    std::filesystem::remove_all(ref);
    std::filesystem::remove_all(dir);
}

TEST(EngineRun, SignalBecomesCheckpointAndInterrupted) {
    const auto dir = fresh_dir("sigterm");
    write_toy_spec(dir, base_options());
    set_signal_stop_flag(true);
    EXPECT_EQ(run_in_process(dir), worker_exit_code(JobState::Interrupted));
    set_signal_stop_flag(false);
    EXPECT_EQ(last_status(events_of(dir)).fields["state"], "interrupted");
    EXPECT_EQ(CheckpointStore(dir / "checkpoints", 3).step_files().size(), 1u);
    std::filesystem::remove_all(dir);
}

TEST(EngineRun, ExtendFinishedRunAndFineTuneFromWeights) {
    const auto dir = fresh_dir("extend");
    Json o = base_options();
    o["epochs"] = 2;
    write_toy_spec(dir, o);
    ASSERT_EQ(run_in_process(dir), worker_exit_code(JobState::Succeeded));
    o["epochs"] = 4;
    write_toy_spec(dir, o);
    ASSERT_EQ(run_in_process(dir, true), worker_exit_code(JobState::Succeeded));
    EXPECT_EQ(csv_of(dir).size(), 5u);
    EXPECT_EQ(of_kind(events_of(dir), "rollback").at(0).fields["to_step"], 12);

    const auto tune = fresh_dir("finetune");
    Json t = base_options();
    t["epochs"] = 1;
    t["weights"] = path_to_utf8(dir / "artifacts" / "weights" / "best.safetensors");
    write_toy_spec(tune, t);
    ASSERT_EQ(run_in_process(tune), worker_exit_code(JobState::Succeeded));
    bool loaded = false;
    for (const auto& e : of_kind(events_of(tune), "log"))
        loaded |=
            e.fields["message"].get<std::string>().find("weights: loaded") != std::string::npos;
    EXPECT_TRUE(loaded);
    // A fine-tuned model starts where the other run ended: its first epoch beats a fresh start's.
    const auto fresh = fresh_dir("fresh");
    Json f = base_options();
    f["epochs"] = 1;
    write_toy_spec(fresh, f);
    ASSERT_EQ(run_in_process(fresh), worker_exit_code(JobState::Succeeded));
    EXPECT_LT(std::stod(csv_of(tune)[1][1]), std::stod(csv_of(fresh)[1][1]));
    std::filesystem::remove_all(dir);
    std::filesystem::remove_all(tune);
    std::filesystem::remove_all(fresh);
}

// A program holding results.csv (Excel locks what it opens on Windows; here a folder of that
// name stands in for it) costs warnings, not the run; once it lets go, the next write carries
// every row.
TEST(EngineRun, ResultsTableThatCannotBeWrittenWarnsAndTheRunGoesOn) {
    const auto dir = fresh_dir("held_results");
    Json o = base_options();
    o["epochs"] = 2;
    write_toy_spec(dir, o);
    std::filesystem::create_directories(dir / "results.csv");
    write_file_atomically(dir / "results.csv" / "held", "a program holds the table");
    ASSERT_EQ(run_in_process(dir), worker_exit_code(JobState::Succeeded));
    int warnings = 0;
    for (const auto& e : of_kind(events_of(dir), "log"))
        if (e.fields["level"] == "warning" &&
            e.fields["message"].get<std::string>().find("results.csv could not be written") !=
                std::string::npos)
            ++warnings;
    EXPECT_EQ(warnings, 3) << "one at the start and one for each epoch";
    EXPECT_TRUE(std::filesystem::exists(dir / "artifacts" / "weights" / "best.safetensors"));

    std::filesystem::remove_all(dir / "results.csv");
    o["epochs"] = 3;
    write_toy_spec(dir, o);
    ASSERT_EQ(run_in_process(dir, true), worker_exit_code(JobState::Succeeded));
    const auto csv = csv_of(dir);
    ASSERT_EQ(csv.size(), 4u) << "the header and every epoch's row, the held ones included";
    EXPECT_EQ(csv[1][0], "1");
    EXPECT_EQ(csv[3][0], "3");
    std::filesystem::remove_all(dir);
}

TEST(EngineRun, TaskDeclaredGroupsGetTheirOwnRatesColumnsAndCheckpointEntries) {
    const auto ref = fresh_dir("groups_ref");
    const auto dir = fresh_dir("groups");
    Json o = base_options();
    o["param_groups"] = "body_head";
    o["nbs"] = 24;  // the pause lands inside an accumulation window
    o["weight_decay"] = 0.01;
    write_toy_spec(ref, o);
    write_toy_spec(dir, o);
    ASSERT_EQ(run_in_process(ref), worker_exit_code(JobState::Succeeded));
    const auto csv = csv_of(ref, /*drop_time=*/false);
    EXPECT_EQ(csv.at(0),
              (std::vector<std::string>{"epoch", "time", "train/mse_loss", "metrics/neg_mse",
                                        "val/mse_loss", "lr/body", "lr/head"}));
    const auto metrics = of_kind(events_of(ref), "metric");
    ASSERT_FALSE(metrics.empty());
    for (const auto& m : metrics) {
        const Json& v = m.fields["values"];
        ASSERT_TRUE(v.contains("lr/body") && v.contains("lr/head")) << v.dump();
        EXPECT_FALSE(v.contains("lr/pg0"));
        const int epoch = m.fields["epoch"].get<int>() - 1;
        EXPECT_DOUBLE_EQ(v["lr/body"].get<double>(), 0.05 * lr_factor(epoch, 4, 0.01, false));
        EXPECT_DOUBLE_EQ(v["lr/head"].get<double>(), 0.5 * v["lr/body"].get<double>());
    }
    CheckpointStore store(ref / "checkpoints", 3);
    std::vector<std::string> rejected;
    const auto loaded = store.load_newest_valid(rejected);
    ASSERT_TRUE(loaded);
    EXPECT_EQ(loaded->data.meta["param_groups"], Json::array({"body", "head"}));
    EXPECT_TRUE(loaded->data.meta["lr"].contains("head"));

    // Paused in the middle and resumed: the state of each group comes back by its name.
    write_stop_request(JobFolder{dir}, StopRequest::Pause);
    EXPECT_EQ(run_in_process(dir), worker_exit_code(JobState::Paused));
    ASSERT_EQ(run_in_process(dir, /*resume=*/true), worker_exit_code(JobState::Succeeded));
    EXPECT_EQ(weights_sha(dir), weights_sha(ref));
    EXPECT_EQ(csv_of(dir), csv_of(ref));
    std::filesystem::remove_all(ref);
    std::filesystem::remove_all(dir);
}

// Rewrites the newest checkpoint of `dir` in the layout checkpoints had before parameter groups
// had names: the learning rates as an array [pg0, pg1, pg2], no `param_groups`, and the optimizer
// as LibTorch's own archive (groups by position).
void rewrite_as_unnamed_groups(const std::filesystem::path& dir, const Json& options) {
    CheckpointStore store(dir / "checkpoints", 3);
    std::vector<std::string> rejected;
    auto loaded = store.load_newest_valid(rejected);
    ASSERT_TRUE(loaded);
    CheckpointData& data = loaded->data;
    ASSERT_TRUE(data.meta.contains("param_groups"));
    const Json lr = data.meta["lr"];
    data.meta["lr"] = Json::array({lr.at("pg0"), lr.at("pg1"), lr.at("pg2")});
    data.meta.erase("param_groups");

    // The optimizer's state into an optimizer of the same parameters, and out in LibTorch's form.
    const auto task = TaskRegistry::instance().get(toy::kTaskId).make();
    TaskContext context;
    context.config = task->schema().resolve(options);
    context.log = [](const std::string&, const std::string&) {};
    task->setup(context);
    const auto model = task->build_model();
    const ParamGroups groups = task->parameter_groups(*model);
    ASSERT_EQ(group_names(groups), (std::vector<std::string>{"pg0", "pg1", "pg2"}));
    auto optimizer =
        make_optimizer({"SGD", 0.05, options.at("momentum").get<double>(), 0.1}, groups, 0.0);
    optimizer_state_from_bytes(*optimizer, group_names(groups), data.blobs.at("optimizer"));
    data.blobs["optimizer"] = optimizer_to_bytes(*optimizer);
    write_file_atomically(loaded->file, encode_checkpoint(data));
}

TEST(EngineRun, ACheckpointFromBeforeNamedGroupsResumesExactly) {
    toy::ensure_registered();
    const auto ref = fresh_dir("unnamed_ref");
    const auto dir = fresh_dir("unnamed");
    Json o = base_options();
    o["nbs"] = 24;
    o["lrf"] = 1.0;         // a constant rate: 2 epochs extended to 3 are the first 2 of 3
    o["momentum"] = 0.937;  // momentum buffers to carry over
    o["epochs"] = 3;
    write_toy_spec(ref, o);
    ASSERT_EQ(run_in_process(ref), worker_exit_code(JobState::Succeeded));
    // 2 epochs, rewritten in the old layout, then extended to 3.
    o["epochs"] = 2;
    write_toy_spec(dir, o);
    ASSERT_EQ(run_in_process(dir), worker_exit_code(JobState::Succeeded));
    ASSERT_NO_FATAL_FAILURE(rewrite_as_unnamed_groups(dir, o));
    o["epochs"] = 3;
    write_toy_spec(dir, o);
    ASSERT_EQ(run_in_process(dir, /*resume=*/true), worker_exit_code(JobState::Succeeded));
    EXPECT_EQ(of_kind(events_of(dir), "rollback").at(0).fields["to_step"], 12);
    EXPECT_EQ(weights_sha(dir), weights_sha(ref));
    EXPECT_EQ(csv_of(dir), csv_of(ref));
    std::filesystem::remove_all(ref);
    std::filesystem::remove_all(dir);
}

// The same older layout resumed by a task that now declares groups of its own (as the LoRA
// tasks do): its lr/<group> columns of the epochs before read the old lr/pg1, the other columns
// stay. Plain SGD keeps no optimizer state, so the states are not what is tested here.
TEST(EngineRun, ACheckpointOfTheDefaultGroupsResumesIntoATasksOwnGroups) {
    toy::ensure_registered();
    const auto dir = fresh_dir("unnamed_own");
    Json o = base_options();
    o["momentum"] = 0.0;
    o["lrf"] = 1.0;
    o["epochs"] = 1;
    write_toy_spec(dir, o);
    ASSERT_EQ(run_in_process(dir), worker_exit_code(JobState::Succeeded));
    const auto before = csv_of(dir);
    ASSERT_NO_FATAL_FAILURE(rewrite_as_unnamed_groups(dir, o));
    o["param_groups"] = "body_head";
    o["epochs"] = 2;
    write_toy_spec(dir, o);
    ASSERT_EQ(run_in_process(dir, /*resume=*/true), worker_exit_code(JobState::Succeeded));
    const auto after = csv_of(dir);
    ASSERT_EQ(after.size(), 3u);
    EXPECT_EQ(after[0], (std::vector<std::string>{"epoch", "train/mse_loss", "metrics/neg_mse",
                                                  "val/mse_loss", "lr/body", "lr/head"}));
    // epoch, the loss and the metrics as they were; lr/body and lr/head from lr/pg1 (0.05).
    EXPECT_EQ(std::vector<std::string>(after[1].begin(), after[1].begin() + 4),
              std::vector<std::string>(before[1].begin(), before[1].begin() + 4));
    EXPECT_EQ(after[1][4], before[1][5]);
    EXPECT_EQ(after[1][5], before[1][5]);
    EXPECT_EQ(std::stod(after[2][5]), 0.025);  // the head's half rate from here on
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace crucible::engine
