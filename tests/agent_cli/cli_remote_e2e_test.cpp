// POSIX-only test: raw BSD sockets play a broken agent (Winsock twin: open work).
// The command line against a real crucible-agent process on loopback running the fake worker:
// remote add -> ls -> push -> submit -> jobs -> logs -f -> download, and a second job that is
// cancelled. Each step is the `crucible remote` command as a user runs it (built from the CLI's
// own sources, see CMakeLists.txt), with its configuration (remotes.json, secrets) in a private
// folder.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "core/base/child_process.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/sha256.h"
#include "core/data/synth/synth.h"
#include "core/net/api_client.h"
#include "core/net/tls.h"
#include "core/net/token_store.h"
#include "tests/support/free_port.h"
#include "tests/support/temp_dir.h"

using namespace crucible;
namespace fs = std::filesystem;

namespace {

using test_support::free_loopback_port;

struct CliRun {
    int code = -1;
    std::string out;  // stdout and stderr together
};

struct CliRemoteE2E : ::testing::Test {
    fs::path root, data, config;
    std::unique_ptr<ChildProcess> agent;
    int port = 0;
    int runs = 0;

    void SetUp() override {
        root = test_support::scratch_dir("cli_e2e");
        data = root / "agent-data";
        config = root / "config";
        fs::create_directories(data);
        fs::create_directories(config);
    }
    void TearDown() override {
        if (agent) {
            agent->kill();
            agent->wait();
        }
        fs::remove_all(root);
    }

    CliRun crucible(const std::vector<std::string>& args,
                    const std::string& program = CRUCIBLE_CLI_EXE) {
        ChildOptions o;
        o.program = program;
        o.args = args;
        o.env["CRUCIBLE_CONFIG_DIR"] = path_to_utf8(config);
        o.working_dir = root;
        o.log_file = root / ("run" + std::to_string(runs++) + ".log");
        auto child = ChildProcess::start(o);
        CliRun r;
        r.code = child->wait().code;
        r.out = read_file_bytes(o.log_file);
        return r;
    }

    void start_agent(const std::string& worker = CRUCIBLE_FAKE_WORKER) {
        port = free_loopback_port();
        ChildOptions o;
        o.program = CRUCIBLE_AGENT_EXE;
        o.args = {"--listen",       "127.0.0.1:" + std::to_string(port),
                  "--data",         path_to_utf8(data),
                  "--worker",       worker,
                  "--nvml",         "/nonexistent/libnvidia-ml.so.1",
                  "--max-cpu-jobs", "2"};
        o.log_file = root / "agent.log";
        agent = ChildProcess::start(o);
        net::ApiClient probe({url(), "", ""});
        for (int i = 0; i < 500; ++i) {
            try {
                if (probe.get("/v1/health")["status"] == "ok") return;
            } catch (const std::exception&) {
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        FAIL() << "the agent did not come up: " << read_file_bytes(root / "agent.log");
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
#ifdef CRUCIBLE_REAL_WORKER
    // An agent with crucible-worker, added as remote "gpu"; returns its token.
    std::string add_real_agent() {
        const std::string tok = net::TokenStore(data / "tokens.json").create("ci");
        start_agent(CRUCIBLE_REAL_WORKER);
        EXPECT_EQ(crucible({"remote", "add", "gpu", url(), "--token", tok}).code, 0);
        return tok;
    }
#endif
};

std::string last_line(const std::string& text) {
    std::string t = text;
    while (!t.empty() && t.back() == '\n')
        t.pop_back();
    auto nl = t.rfind('\n');
    return nl == std::string::npos ? t : t.substr(nl + 1);
}

}  // namespace

TEST_F(CliRemoteE2E, AddPushSubmitJobsLogsDownloadCancel) {
    // The admin creates a token on the GPU machine (what `crucible agent token create` does);
    // only its hash is stored there.
    const std::string tok = net::TokenStore(data / "tokens.json").create("ci");
    EXPECT_EQ(read_file_bytes(data / "tokens.json").find(tok), std::string::npos);
    start_agent();

    // A wrong token is refused at `remote add` and nothing is stored.
    CliRun bad = crucible({"remote", "add", "gpu", url(), "--token", "crt_wrong"});
    EXPECT_NE(bad.code, 0);
    EXPECT_NE(bad.out.find("invalid token"), std::string::npos) << bad.out;
    CliRun ls0 = crucible({"remote", "ls"});
    EXPECT_NE(ls0.out.find("no remotes"), std::string::npos) << ls0.out;

    CliRun add = crucible({"remote", "add", "gpu", url(), "--token", tok});
    ASSERT_EQ(add.code, 0) << add.out;
    EXPECT_NE(add.out.find("Connected"), std::string::npos) << add.out;
    CliRun ls = crucible({"remote", "ls"});
    EXPECT_NE(ls.out.find("gpu"), std::string::npos);
    EXPECT_NE(ls.out.find("token stored"), std::string::npos) << ls.out;
    EXPECT_EQ(read_file_bytes(config / "remotes.json").find(tok), std::string::npos)
        << "the token must live in the secret store, not remotes.json";
    // The token need not be on the command line, where other users of the machine see it.
    const auto token_file = root / "token.txt";
    std::ofstream(token_file) << tok << "\n";
    CliRun from_file =
        crucible({"remote", "add", "gpu-file", url(), "--token-file", path_to_utf8(token_file)});
    ASSERT_EQ(from_file.code, 0) << from_file.out;
    EXPECT_NE(from_file.out.find("Connected"), std::string::npos) << from_file.out;
    ASSERT_EQ(crucible({"remote", "rm", "gpu-file"}).code, 0);

    // Push a small dataset folder (a Chinese file name included).
    auto folder = root / "my data";
    fs::create_directories(folder / "images");
    std::ofstream(folder / "images" / "a.jpg", std::ios::binary) << std::string(3000, 'a');
    std::ofstream(folder / path_from_utf8("images/\xe7\x8c\xab.jpg"), std::ios::binary)
        << std::string(2000, 'b');
    std::ofstream(folder / "data.yaml") << "names: [cat]\n";
    CliRun push = crucible({"remote", "push", "gpu", path_to_utf8(folder)});
    ASSERT_EQ(push.code, 0) << push.out;
    const std::string dataset = last_line(push.out);
    ASSERT_EQ(dataset.rfind("dataset:", 0), 0u) << push.out;
    EXPECT_TRUE(fs::exists(data / "datasets" / dataset.substr(8) /
                           path_from_utf8("images/\xe7\x8c\xab.jpg")));

    // Submit, list, follow to the end.
    CliRun submit = crucible({"remote", "submit", "gpu", "test.fake", "steps=12", "delay_ms=5",
                              "data=" + dataset, "--name", "first"});
    ASSERT_EQ(submit.code, 0) << submit.out;
    const std::string job = last_line(submit.out);
    ASSERT_EQ(job.rfind("j", 0), 0u) << submit.out;
    CliRun jobs_list = crucible({"remote", "jobs", "gpu"});
    ASSERT_EQ(jobs_list.code, 0) << jobs_list.out;
    EXPECT_NE(jobs_list.out.find(job), std::string::npos) << jobs_list.out;
    EXPECT_NE(jobs_list.out.find("first"), std::string::npos) << jobs_list.out;
    CliRun logs = crucible({"remote", "logs", "gpu", job, "-f"});
    ASSERT_EQ(logs.code, 0) << logs.out;
    EXPECT_NE(logs.out.find("\"train/loss\""), std::string::npos) << logs.out;
    EXPECT_NE(logs.out.find("job " + job + ": succeeded"), std::string::npos) << logs.out;
    // The dataset reference reached the worker as a folder on the agent.
    std::string spec = read_file_bytes(data / "jobs" / job / "spec.json");
    EXPECT_NE(spec.find(path_to_utf8(data / "datasets" / dataset.substr(8))), std::string::npos)
        << spec;
    // `logs` without -f after a seq prints just the rest.
    CliRun tail = crucible({"remote", "logs", "gpu", job, "--after", "12"});
    ASSERT_EQ(tail.code, 0) << tail.out;
    EXPECT_EQ(tail.out.find("    12 "), std::string::npos) << tail.out;
    EXPECT_NE(tail.out.find("    13 "), std::string::npos) << tail.out;

    // Download `best`; a second download into the same file is refused unless --force.
    auto out = root / "best.safetensors";
    CliRun dl = crucible(
        {"remote", "download", "gpu", job, "artifacts/best.safetensors", path_to_utf8(out)});
    ASSERT_EQ(dl.code, 0) << dl.out;
    EXPECT_EQ(sha256_file(out), sha256_file(data / "jobs" / job / "artifacts/best.safetensors"));
    CliRun again = crucible(
        {"remote", "download", "gpu", job, "artifacts/best.safetensors", path_to_utf8(out)});
    EXPECT_NE(again.code, 0);
    EXPECT_NE(again.out.find("--force"), std::string::npos) << again.out;
    CliRun forced = crucible({"remote", "download", "gpu", job, "artifacts/best.safetensors",
                              path_to_utf8(out), "--force"});
    EXPECT_EQ(forced.code, 0) << forced.out;
    CliRun traversal = crucible({"remote", "download", "gpu", job, "../../tokens.json"});
    EXPECT_NE(traversal.code, 0);

    // A long job, cancelled from the command line.
    CliRun slow = crucible({"remote", "submit", "gpu", "test.fake", "steps=2000", "delay_ms=20"});
    ASSERT_EQ(slow.code, 0) << slow.out;
    const std::string slow_job = last_line(slow.out);
    net::ApiClient api({url(), tok, ""});
    for (int i = 0; i < 500 && api.get("/v1/jobs/" + slow_job)["state"] != "running"; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CliRun cancel = crucible({"remote", "cancel", "gpu", slow_job});
    ASSERT_EQ(cancel.code, 0) << cancel.out;
    CliRun follow = crucible({"remote", "logs", "gpu", slow_job, "-f"});
    EXPECT_NE(follow.out.find("job " + slow_job + ": canceled"), std::string::npos) << follow.out;
    CliRun cancel_again = crucible({"remote", "cancel", "gpu", slow_job});
    EXPECT_NE(cancel_again.code, 0);
    EXPECT_NE(cancel_again.out.find("already ended"), std::string::npos) << cancel_again.out;

    // The audit log names who did what.
    std::string audit = read_file_bytes(data / "audit.log");
    for (const char* action : {"\"submit\"", "\"cancel\"", "\"download\"", "\"dataset\""})
        EXPECT_NE(audit.find(action), std::string::npos) << action;
    EXPECT_NE(audit.find("\"who\":\"ci\""), std::string::npos);
}

// Pretrained weights and a dataset on the person's machine travel with `remote submit`: the
// worker gets paths on the agent with the same bytes, and the weights keep their file name (the
// task tells .pt from .safetensors by it).
TEST_F(CliRemoteE2E, SubmitUploadsLocalWeightsAndDatasetFolders) {
    const std::string tok = net::TokenStore(data / "tokens.json").create("ci");
    start_agent();
    ASSERT_EQ(crucible({"remote", "add", "gpu", url(), "--token", tok}).code, 0);
    const auto weights = root / path_from_utf8("\xe6\xa8\xa1\xe5\x9e\x8b yolov8n.pt");  // 模型
    std::ofstream(weights, std::ios::binary) << std::string(70000, '\x5a') << "end";
    const auto folder = root / "local set";
    fs::create_directories(folder / "images");
    std::ofstream(folder / "images" / "a.jpg", std::ios::binary) << std::string(500, 'a');
    std::ofstream(folder / "data.yaml") << "names: [cat]\n";

    CliRun submit =
        crucible({"remote", "submit", "gpu", "test.fake", "steps=3", "delay_ms=1",
                  "model=" + path_to_utf8(weights), "data=" + path_to_utf8(folder / "data.yaml")});
    ASSERT_EQ(submit.code, 0) << submit.out;
    EXPECT_NE(submit.out.find("uploading"), std::string::npos) << submit.out;
    const std::string job = last_line(submit.out);
    const Json spec = Json::parse(read_file_bytes(data / "jobs" / job / "spec.json"));
    const Json& options = spec.contains("options") ? spec["options"] : spec;
    const auto model_on_agent = path_from_utf8(options.at("model").get<std::string>());
    EXPECT_TRUE(is_path_inside(data / "inputs", model_on_agent)) << spec.dump();
    EXPECT_EQ(model_on_agent.filename(), weights.filename());
    EXPECT_EQ(sha256_file(model_on_agent), sha256_file(weights));
    const auto data_on_agent = path_from_utf8(options.at("data").get<std::string>());
    EXPECT_TRUE(is_path_inside(data / "datasets", data_on_agent)) << spec.dump();
    EXPECT_EQ(data_on_agent.filename(), "data.yaml");
    EXPECT_EQ(read_file_bytes(data_on_agent), "names: [cat]\n");

    // A server path that is not on this machine is sent as it is, and the agent judges it.
    CliRun outside = crucible({"remote", "submit", "gpu", "test.fake", "model=/nonexistent/x.pt"});
    EXPECT_NE(outside.code, 0);
    EXPECT_NE(outside.out.find("outside the folders this agent shares"), std::string::npos)
        << outside.out;
    // A reference to a blob the agent does not have, or with a path in its name, is refused.
    CliRun missing = crucible(
        {"remote", "submit", "gpu", "test.fake", "model=blob:" + std::string(64, 'a') + "/w.pt"});
    EXPECT_NE(missing.code, 0);
    EXPECT_NE(missing.out.find("upload the file first"), std::string::npos) << missing.out;
    const std::string sha = sha256_file(weights);
    CliRun traversal = crucible(
        {"remote", "submit", "gpu", "test.fake", "model=blob:" + sha + "/../../tokens.json"});
    EXPECT_NE(traversal.code, 0);
    EXPECT_NE(traversal.out.find("plain file name"), std::string::npos) << traversal.out;
}

// A real detection job through the agent and the command line: the dataset on this machine is
// pushed with the submit, crucible-worker trains YOLOv8n for two epochs on it, `logs -f`
// follows to the end, and `download` brings back the best weights byte for byte.
TEST_F(CliRemoteE2E, RealYoloJobFollowedToTheEndAndBestDownloaded) {
#ifndef CRUCIBLE_REAL_WORKER
    GTEST_SKIP() << "crucible-worker is not part of this build";
#else
    const std::string tok = add_real_agent();
    data::SynthOptions so;
    so.train = 8;
    so.val = 4;
    so.classes = 2;
    so.imgsz = 64;
    const fs::path yaml = data::write_synth_dataset(root / "shapes", so);
    CliRun submit = crucible({"remote", "submit", "gpu", "detect.yolo",
                              "data=" + path_to_utf8(yaml), "model=yolov8n", "epochs=2", "imgsz=64",
                              "batch=4", "device=cpu", "workers=1", "--name", "synthetic"});
    ASSERT_EQ(submit.code, 0) << submit.out;
    const std::string job = last_line(submit.out);
    CliRun logs = crucible({"remote", "logs", "gpu", job, "-f"});
    ASSERT_EQ(logs.code, 0) << logs.out;
    EXPECT_NE(logs.out.find("job " + job + ": succeeded"), std::string::npos) << logs.out;
    EXPECT_NE(logs.out.find("\"metrics/mAP50(B)\""), std::string::npos) << logs.out;
    EXPECT_NE(logs.out.find("\"train/box_loss\""), std::string::npos) << logs.out;
    const auto out = root / "best.safetensors";
    CliRun dl = crucible({"remote", "download", "gpu", job, "artifacts/weights/best.safetensors",
                          path_to_utf8(out)});
    ASSERT_EQ(dl.code, 0) << dl.out;
    const auto on_agent = data / "jobs" / job / "artifacts" / "weights" / "best.safetensors";
    EXPECT_EQ(sha256_file(out), sha256_file(on_agent));
    const std::string bytes = read_file_bytes(out);
    ASSERT_GT(bytes.size(), 1000000u);  // YOLOv8n: about 3 M parameters
    EXPECT_EQ(bytes[8], '{');           // a safetensors header follows the 8-byte length
    EXPECT_NE(bytes.find("crucible_yolo_scale"), std::string::npos);
#endif
}

// [B2 7/8] Pre-labelling on the server's GPU, from the command line: `remote submit --command
// predict` sends the local images (as a dataset) and weights (as a blob), crucible-worker runs
// `crucible predict` in the job's folder, and its label files come back with `download`. Where
// the output goes is the agent's business: `project=` is refused, as is a command the task does
// not run as a job.
TEST_F(CliRemoteE2E, PredictCommandRunsAsAJobAndItsLabelsComeBack) {
#ifndef CRUCIBLE_REAL_WORKER
    GTEST_SKIP() << "crucible-worker is not part of this build";
#else
    const std::string tok = add_real_agent();
    data::SynthOptions so;
    so.train = 1;
    so.val = 3;
    so.classes = 4;
    so.imgsz = 64;
    const fs::path yaml = data::write_synth_dataset(root / "shapes", so);
    const fs::path images = yaml.parent_path() / "images" / "val";
    const std::string weights =
        path_to_utf8(fs::path(CRUCIBLE_FIXTURES_DIR) / "yolov8" / "yolov8n_shapes11.pt");
    const std::vector<std::string> predict = {"remote",
                                              "submit",
                                              "gpu",
                                              "detect",
                                              "--command",
                                              "predict",
                                              "source=" + path_to_utf8(images),
                                              "model=" + weights};
    auto with = [&](std::vector<std::string> extra) {
        auto args = predict;
        args.insert(args.end(), extra.begin(), extra.end());
        return crucible(args);
    };
    CliRun refused = with({"project=" + path_to_utf8(root)});
    EXPECT_NE(refused.code, 0);
    EXPECT_NE(refused.out.find("project: a job's output stays in its folder"), std::string::npos)
        << refused.out;
    CliRun no_such = crucible({"remote", "submit", "gpu", "detect", "--command", "val"});
    EXPECT_NE(no_such.code, 0);
    EXPECT_NE(no_such.out.find("has no command 'val' that runs as a job (it has: predict)"),
              std::string::npos)
        << no_such.out;

    CliRun submit = with({"save=false", "save_txt=true", "conf=0.001", "imgsz=64", "device=cpu"});
    ASSERT_EQ(submit.code, 0) << submit.out;
    const std::string job = last_line(submit.out);
    CliRun logs = crucible({"remote", "logs", "gpu", job, "-f"});
    ASSERT_EQ(logs.code, 0) << logs.out;
    EXPECT_NE(logs.out.find("job " + job + ": succeeded"), std::string::npos) << logs.out;
    const auto label = root / "000000.txt";
    CliRun dl = crucible({"remote", "download", "gpu", job, "runs/detect/predict/labels/000000.txt",
                          path_to_utf8(label)});
    ASSERT_EQ(dl.code, 0) << dl.out;
    // Rows `class cx cy w h conf`: at confidence 0.001 the fixture's model suggests something.
    const std::string rows = read_file_bytes(label);
    EXPECT_FALSE(rows.empty());
    EXPECT_EQ(std::count(rows.begin(), rows.end(), ' '),
              5 * std::count(rows.begin(), rows.end(), '\n'))
        << rows;
    // The job says what it ran.
    net::ApiClient client({url(), tok, ""});
    EXPECT_EQ(client.job(job).command, "predict");
#endif
}

// [B2 6/8] A job asking for two CPU ranks, through the agent (what the studio's run form
// sends): crucible-worker becomes the ranks' launcher, the run is one job with one set of
// curves, and a cancel from the command line ends every rank.
TEST_F(CliRemoteE2E, TwoRankJobsRunAsOneJobAndCancelEndsEveryRank) {
#ifndef CRUCIBLE_REAL_WORKER
    GTEST_SKIP() << "crucible-worker is not part of this build";
#else
    const std::string tok = add_real_agent();
    data::SynthOptions so;
    so.train = 8;
    so.val = 4;
    so.classes = 2;
    so.imgsz = 64;
    const fs::path yaml = data::write_synth_dataset(root / "shapes", so);
    const std::vector<std::string> common = {"data=" + path_to_utf8(yaml),
                                             "model=yolov8n",
                                             "imgsz=64",
                                             "batch=4",
                                             "device=cpu",
                                             "ranks=2",
                                             "workers=1",
                                             "log_steps=1"};
    std::vector<std::string> args = {"remote", "submit", "gpu", "detect.yolo", "epochs=2"};
    args.insert(args.end(), common.begin(), common.end());
    CliRun submit = crucible(args);
    ASSERT_EQ(submit.code, 0) << submit.out;
    const std::string job = last_line(submit.out);
    CliRun logs = crucible({"remote", "logs", "gpu", job, "-f"});
    ASSERT_EQ(logs.code, 0) << logs.out;
    EXPECT_NE(logs.out.find("job " + job + ": succeeded"), std::string::npos) << logs.out;
    const fs::path folder = data / "jobs" / job;
    EXPECT_TRUE(fs::exists(folder / "worker.rank1.log"));
    std::vector<std::int64_t> steps;
    for (const auto& e : read_event_log(folder / "events.jsonl"))
        if (e.kind == "metric" && e.fields["values"].contains("train/box_loss"))
            steps.push_back(e.step());
    EXPECT_EQ(steps, (std::vector<std::int64_t>{1, 2, 3, 4})) << "one point per global step";

    args = {"remote", "submit", "gpu", "detect.yolo", "epochs=500"};
    args.insert(args.end(), common.begin(), common.end());
    CliRun slow = crucible(args);
    ASSERT_EQ(slow.code, 0) << slow.out;
    const std::string slow_job = last_line(slow.out);
    const fs::path slow_folder = data / "jobs" / slow_job;
    for (int i = 0; i < 600 && !fs::exists(slow_folder / "worker.rank1.log"); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_EQ(crucible({"remote", "cancel", "gpu", slow_job}).code, 0);
    CliRun follow = crucible({"remote", "logs", "gpu", slow_job, "-f"});
    EXPECT_NE(follow.out.find("job " + slow_job + ": canceled"), std::string::npos) << follow.out;
    // No rank is left: nothing running names the job's folder.
    int left = 0;
    for (const auto& entry : fs::directory_iterator("/proc")) {
        std::ifstream in(entry.path() / "cmdline", std::ios::binary);
        const std::string cmdline((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
        left += cmdline.find(path_to_utf8(slow_folder)) != std::string::npos;
    }
    EXPECT_EQ(left, 0);
#endif
}

// The studio's trust dialog and `crucible remote add` ask the user to compare the fingerprint
// with what `crucible agent doctor` prints on the server: it does print it.
TEST_F(CliRemoteE2E, DoctorPrintsTheFingerprintClientsPin) {
#ifndef CRUCIBLE_FULL_CLI_EXE
    GTEST_SKIP() << "the full crucible CLI (with LibTorch) is not part of this build";
#else
    auto doctor = [&] {
        return crucible({"agent", "doctor", "--data", path_to_utf8(data), "--nvml",
                         "/nonexistent/libnvidia-ml.so.1"},
                        CRUCIBLE_FULL_CLI_EXE);
    };
    auto none = doctor();
    EXPECT_NE(none.out.find("TLS fingerprint:     none yet"), std::string::npos) << none.out;
    const auto paths =
        net::ensure_self_signed_certificate(net::self_signed_certificate_paths(data), "127.0.0.1");
    auto r = doctor();
    EXPECT_NE(r.out.find("TLS fingerprint:     " + net::certificate_fingerprint_file(paths.cert)),
              std::string::npos)
        << r.out;
#endif
}
