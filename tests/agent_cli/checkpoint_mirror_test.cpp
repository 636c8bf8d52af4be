// Checkpoints that outlive the machine, end to end: real crucible-agent processes running the
// real crucible-worker on a small synthetic detection set, mirroring to a real S3-compatible
// server on loopback (moto, signatures checked). The first "machine" is lost in the middle of
// the run (its agent and worker killed, its data folder deleted); a fresh agent with a new data
// folder, pointed at the same bucket with `crucible agent mirror set`, is given the same job
// under the same run id, brings the newest mirrored checkpoint back and finishes the run with
// exactly the weights and results of an uninterrupted run. Without moto the test fails naming
// `bash installer/setup.sh test`.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

#include "core/base/child_process.h"
#include "core/base/file_io.h"
#include "core/base/job_folder.h"
#include "core/base/secret_store.h"
#include "core/base/sha256.h"
#include "core/data/synth/synth.h"
#include "core/jobs/checkpoint_mirror.h"
#include "core/net/api_client.h"
#include "core/net/token_store.h"
#include "tests/agent_cli/s3_test_server.h"
#include "tests/support/free_port.h"
#include "tests/support/temp_dir.h"

using namespace crucible;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One GPU machine: an agent process with its own data folder.
struct Machine {
    fs::path data;
    std::unique_ptr<ChildProcess> agent;
    std::string token;
    int port = 0;

    net::ApiClient client() const {
        return net::ApiClient({"http://127.0.0.1:" + std::to_string(port), token, ""});
    }
    fs::path job_dir(const std::string& id) const { return data / "jobs" / id; }
};

struct CheckpointMirrorE2E : ::testing::Test {
    test_support::TempDir root{"mirror_e2e"};
    std::unique_ptr<test_support::MotoServer> moto;
    fs::path yaml;
    int cli_runs = 0;

    void SetUp() override {
        if (auto why = test_support::moto_missing()) FAIL() << *why;
        moto = std::make_unique<test_support::MotoServer>(root / "moto.log");
        bucket()->create_bucket();
        data::SynthOptions so;
        // batch 4: eight steps an epoch. Long epochs make the mirror, which uploads the newest
        // checkpoint each time it wakes, likely to find one from inside an epoch: with short
        // ones the slow epoch end (validation, weights) held the newest checkpoint most of the
        // time, and a whole run could pass with only epoch-end checkpoints mirrored.
        so.train = 32;
        so.val = 4;
        so.classes = 2;
        so.imgsz = 64;
        yaml = data::write_synth_dataset(root / "shared" / "shapes", so);
    }
    void TearDown() override {
        for (auto* m : {&first, &second})
            if (m->agent) {
                m->agent->kill();
                m->agent->wait();
            }
    }

    std::unique_ptr<net::S3Client> bucket() {
        return std::make_unique<net::S3Client>(net::S3Location{moto->endpoint(), "runs"},
                                               moto->credentials());
    }

    // `crucible agent mirror set` as the admin of a GPU machine runs it: the secret from the
    // environment, never on the command line.
    void mirror_set(const Machine& m, const std::vector<std::string>& flags) {
        ChildOptions o;
        o.program = CRUCIBLE_CLI_EXE;
        o.args = {"agent",
                  "mirror",
                  "set",
                  "--data",
                  path_to_utf8(m.data),
                  "--endpoint",
                  moto->endpoint(),
                  "--bucket",
                  "runs",
                  "--prefix",
                  "crucible/test",
                  "--keep",
                  "2",
                  "--access-key-id",
                  moto->credentials().access_key_id};
        o.args.insert(o.args.end(), flags.begin(), flags.end());
        o.env["AWS_SECRET_ACCESS_KEY"] = moto->credentials().secret_access_key;
        o.log_file = root / ("cli" + std::to_string(cli_runs++) + ".log");
        const auto exit = ChildProcess::start(o)->wait();
        ASSERT_EQ(exit.code, 0) << read_file_bytes(o.log_file);
        const std::string agent_json = read_file_bytes(m.data / "agent.json");
        EXPECT_EQ(agent_json.find(moto->credentials().secret_access_key), std::string::npos);
        EXPECT_EQ(SecretStore::open_file(jobs::agent_secrets_file(m.data))
                      ->get(jobs::kMirrorSecretKeySecret)
                      .value_or(""),
                  moto->credentials().secret_access_key);
        // The test's own settings: the dataset's folder is shared, the mirror looks often.
        Json j = read_json_file(m.data / "agent.json");
        j["roots"] = Json::array({path_to_utf8(root / "shared")});
        j["mirror"]["poll_ms"] = 100;
        write_json_file(m.data / "agent.json", j);
    }

    void start(Machine& m, const std::string& name, bool with_mirror = true,
               const std::string& worker = CRUCIBLE_REAL_WORKER,
               const std::vector<std::string>& mirror_flags = {}) {
        m.data = root / name;
        fs::create_directories(m.data);
        m.token = net::TokenStore(m.data / "tokens.json").create("ci");
        if (with_mirror) mirror_set(m, mirror_flags);
        launch(m, name + "-agent.log", worker);
    }

    // Starts (or starts again) the machine's agent on its data folder.
    void launch(Machine& m, const std::string& log, const std::string& worker) {
        m.port = test_support::free_loopback_port();
        ChildOptions o;
        o.program = CRUCIBLE_AGENT_EXE;
        o.args = {"--listen",       "127.0.0.1:" + std::to_string(m.port),
                  "--data",         path_to_utf8(m.data),
                  "--worker",       worker,
                  "--nvml",         "/nonexistent/libnvidia-ml.so.1",
                  "--max-cpu-jobs", "1"};
        o.log_file = root / log;
        m.agent = ChildProcess::start(o);
        for (int i = 0; i < 500; ++i) {
            try {
                if (m.client().get("/v1/health")["status"] == "ok") return;
            } catch (const std::exception&) {
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        FAIL() << "agent " << log << " did not come up: " << read_file_bytes(o.log_file);
    }

    net::SubmitRequest job(const std::string& run_id) const {
        net::SubmitRequest r;
        r.task = "detect.yolo";
        r.options = {{"data", path_to_utf8(yaml)},
                     {"model", "yolov8n"},
                     {"epochs", 6},
                     {"imgsz", 64},
                     {"batch", 4},
                     {"device", "cpu"},
                     {"workers", 1},
                     {"checkpoint_steps", 1}};  // seven of eight mid-epoch
        r.run_id = run_id;
        return r;
    }

    net::JobInfo wait_until_ended(const Machine& m, const std::string& id, double limit_s) {
        const auto t0 = Clock::now();
        net::JobInfo j;
        while (seconds_since(t0) < limit_s) {
            j = m.client().job(id);
            if (jobs::is_final_state(j.state)) return j;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        ADD_FAILURE() << "job " << id << " still " << jobs::job_state_name(j.state) << " after "
                      << limit_s << " s: " << j.reason;
        return j;
    }

    // The mirrored step checkpoints of a run, highest step first.
    std::vector<std::int64_t> mirrored_steps(const std::string& run_id) {
        std::vector<std::int64_t> steps;
        for (const auto& o : bucket()->list("crucible/test/" + run_id + "/checkpoints/"))
            if (auto s = JobFolder::step_of_checkpoint(o.key.substr(o.key.rfind('/') + 1)))
                steps.push_back(*s);
        std::sort(steps.rbegin(), steps.rend());
        return steps;
    }

    Machine first, second;
};

// results.csv without its wall-clock column ("time", the second): every other value must match.
std::string without_time(const fs::path& csv) {
    std::string out, line;
    std::istringstream in(read_file_bytes(csv));
    while (std::getline(in, line)) {
        const auto a = line.find(','), b = line.find(',', a + 1);
        out +=
            (a == std::string::npos || b == std::string::npos ? line : line.erase(a, b - a)) + "\n";
    }
    return out;
}

std::string sha_of(const fs::path& file) {
    std::error_code ec;
    return fs::exists(file, ec) ? sha256_file(file) : "(missing " + path_to_utf8(file) + ")";
}

}  // namespace

TEST_F(CheckpointMirrorE2E, SpotMachineLostMidEpochResumesElsewhereBitIdentical) {
    const auto t_test = Clock::now();
    const int steps_per_epoch = 8;

    // Machine 1 trains run "spot-1" until the bucket's newest checkpoint lies inside an epoch,
    // the second or a later one; then the machine is gone: agent and worker killed, data folder
    // deleted.
    const std::vector<std::string> cap = {"--max-mbps", "2000"};
    start(first, "machine-1", true, CRUCIBLE_REAL_WORKER, cap);
    const std::string run = "spot-1";
    const auto submitted = first.client().submit(job(run));
    EXPECT_EQ(submitted.run_id, run);
    {
        // One job per run id at a time on an agent.
        try {
            first.client().submit(job(run));
            ADD_FAILURE() << "a second job under a running run id was accepted";
        } catch (const net::ApiError& e) {
            EXPECT_EQ(e.status(), 409) << e.what();
        }
    }
    const auto t0 = Clock::now();
    std::int64_t mirrored = -1;
    net::JobInfo before;
    while (seconds_since(t0) < 120) {
        const auto steps = mirrored_steps(run);
        before = first.client().job(submitted.id);
        if (!steps.empty() && steps.front() > steps_per_epoch &&
            steps.front() % steps_per_epoch != 0) {
            mirrored = steps.front();
            break;
        }
        ASSERT_FALSE(jobs::is_final_state(before.state))
            << "the job ended before a checkpoint from inside an epoch was mirrored: "
            << before.reason << "\n"
            << read_file_bytes(root / "machine-1-agent.log");
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_GT(mirrored, steps_per_epoch) << read_file_bytes(root / "machine-1-agent.log");
    const double t_mirrored = seconds_since(t0);
    ASSERT_EQ(before.state, jobs::JobState::Running);
    first.agent->kill();
    first.agent->wait();
    first.agent.reset();
    if (before.pid > 0) kill_process(before.pid);
    for (int i = 0; i < 100 && before.pid > 0 && process_alive(before.pid); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    fs::remove_all(first.data);
    const auto at_loss = mirrored_steps(run);
    ASSERT_FALSE(at_loss.empty());
    const std::int64_t newest = at_loss.front();
    // keep 2, and one more when the machine was lost between an upload and the pruning after it.
    EXPECT_LE(at_loss.size(), 3u) << "older checkpoints are deleted from the bucket";

    // A newer checkpoint in the bucket whose bytes do not hash to its recorded SHA-256 (a
    // storage fault): the restore must pass over it, and delete it.
    const std::string bad_key = "crucible/test/" + run + "/checkpoints/step-000000009999.ckpt";
    bucket()->put_object(bad_key, "not a checkpoint", {{"sha256", sha256_hex("the real bytes")}});

    // Machine 2: a fresh agent, a new data folder, the same bucket and run id.
    start(second, "machine-2", true, CRUCIBLE_REAL_WORKER, cap);
    const auto t_resume = Clock::now();
    const auto resumed = second.client().submit(job(run));
    const auto done = wait_until_ended(second, resumed.id, 180);
    ASSERT_EQ(done.state, jobs::JobState::Succeeded)
        << done.reason << "\n"
        << read_file_bytes(second.job_dir(resumed.id) / "worker.log");
    const double t_resumed = seconds_since(t_resume);
    bool restored_note = false, rolled_back = false, passed_over = false;
    for (const auto& e : second.client().events(resumed.id)) {
        if (e.kind == event_kind::kLog &&
            e.fields.value("message", std::string())
                    .find("step-000000009999.ckpt does not match") != std::string::npos)
            passed_over = true;
        if (e.kind == event_kind::kLog &&
            e.fields.value("message", std::string())
                    .find("goes on from step " + std::to_string(newest)) != std::string::npos)
            restored_note = true;
        if (e.kind == event_kind::kRollback) {
            rolled_back = true;
            EXPECT_EQ(e.fields.value("to_step", -1LL), newest)
                << "the worker resumes from the restored checkpoint";
        }
    }
    EXPECT_TRUE(restored_note) << "no event says the run went on from step " << newest;
    EXPECT_TRUE(passed_over) << "no event says the altered checkpoint was passed over";
    EXPECT_TRUE(rolled_back) << "the worker did not resume";

    // The same job, uninterrupted, on the same machine: the reference.
    const auto t_ref = Clock::now();
    const auto reference = second.client().submit(job(""));
    const auto ref = wait_until_ended(second, reference.id, 180);
    ASSERT_EQ(ref.state, jobs::JobState::Succeeded) << ref.reason;
    const double t_reference = seconds_since(t_ref);
    const JobFolder a{second.job_dir(resumed.id)}, b{second.job_dir(reference.id)};
    for (const char* name : {"last.safetensors", "best.safetensors"})
        EXPECT_EQ(sha_of(a.weights() / name), sha_of(b.weights() / name))
            << name << " differs from the uninterrupted run's";
    EXPECT_EQ(without_time(a.results_csv()), without_time(b.results_csv()));

    // The finished run is complete in the bucket: its newest checkpoints, weights and results,
    // each with the SHA-256 of its bytes.
    const auto t_wait = Clock::now();
    std::vector<net::S3Object> objects;
    bool results = false;
    while (!results && seconds_since(t_wait) < 30) {
        objects = bucket()->list("crucible/test/" + run + "/");
        for (const auto& o : objects)
            results = results || o.key == "crucible/test/" + run + "/" +
                                              a.results_csv().filename().generic_string();
        if (!results) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_TRUE(results) << "results.csv was not mirrored when the job ended";
    const auto at_end = mirrored_steps(run);
    EXPECT_EQ(at_end.size(), 2u);
    EXPECT_TRUE(std::find(at_end.begin(), at_end.end(), 9999) == at_end.end())
        << "the altered checkpoint is still in the bucket";
    const std::string last_key =
        "crucible/test/" + run + "/" +
        (a.weights() / "last.safetensors").lexically_relative(a.dir).generic_string();
    std::string sha;
    const auto meta = bucket()->get_object_to_file(last_key, root / "last.safetensors", &sha);
    EXPECT_EQ(sha, sha_of(a.weights() / "last.safetensors"));
    EXPECT_EQ(meta.count("sha256") ? meta.at("sha256") : "", sha);

    std::printf(
        "[ timing ] checkpoint of step %lld mirrored %.1f s after the submit; newest at the loss: "
        "step %lld; resumed run %.1f s (restore included); uninterrupted run %.1f s; whole test "
        "%.1f s\n",
        static_cast<long long>(mirrored), t_mirrored, static_cast<long long>(newest), t_resumed,
        t_reference, seconds_since(t_test));
    // The agent's own account of one checkpoint upload (size, seconds, MB/s).
    std::istringstream log(read_file_bytes(root / "machine-2-agent.log"));
    for (std::string line; std::getline(log, line);)
        if (line.find(".ckpt -> s3://") != std::string::npos) {
            std::printf("[ mirror ] %s\n", line.c_str());
            break;
        }
}

TEST_F(CheckpointMirrorE2E, RunIdsAreRefusedWithoutAMirrorOrMalformed) {
    start(first, "with-mirror");
    start(second, "without-mirror", false);
    auto refused = [](const Machine& m, const net::SubmitRequest& r, const std::string& says) {
        try {
            m.client().submit(r);
            ADD_FAILURE() << "run id '" << r.run_id << "' was accepted";
        } catch (const net::ApiError& e) {
            EXPECT_EQ(e.status(), 400) << e.what();
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    };
    refused(first, job("has a space"), "run_id");
    refused(first, job(std::string(65, 'a')), "run_id");
    refused(second, job("spot-2"), "no checkpoint mirror");
}

// An upload cut by an agent restart goes on with the parts the bucket does not have yet: the
// parts sent are recorded in the job folder (mirror.json) as they go.
TEST_F(CheckpointMirrorE2E, UploadCutByAnAgentRestartGoesOnWithTheMissingParts) {
    // 40 Mbit/s (5 MB/s) and 5 MiB parts: a 30 MiB checkpoint takes about 6 s, one part 1 s.
    start(first, "machine", true, CRUCIBLE_MIRROR_WORKER, {"--max-mbps", "40", "--part-mb", "5"});
    net::SubmitRequest r;
    r.task = "test.mirror";
    r.options = {{"size_mb", 30}};
    r.run_id = "restart-1";
    const auto submitted = first.client().submit(r);
    const fs::path state = JobFolder{first.job_dir(submitted.id)}.mirror_state();
    std::size_t parts_before = 0;
    const auto t0 = Clock::now();
    while (parts_before == 0 && seconds_since(t0) < 60) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        try {
            const Json j = read_json_file(state);
            if (j.contains("upload")) parts_before = j["upload"]["progress"]["parts"].size();
        } catch (const std::exception&) {
        }
    }
    ASSERT_GT(parts_before, 0u) << read_file_bytes(root / "machine-agent.log");
    first.agent->kill();  // mid-upload; its worker outlives it, as after a crash
    first.agent->wait();
    EXPECT_TRUE(bucket()->list("crucible/test/restart-1/").empty());

    launch(first, "machine-again.log", CRUCIBLE_MIRROR_WORKER);
    const auto done = wait_until_ended(first, submitted.id, 120);
    EXPECT_EQ(done.state, jobs::JobState::Succeeded) << done.reason;
    const std::string key = "crucible/test/restart-1/checkpoints/step-000000000001.ckpt";
    const auto t1 = Clock::now();
    while (bucket()->list(key).empty() && seconds_since(t1) < 60)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::string sha;
    bucket()->get_object_to_file(key, root / "back.ckpt", &sha);
    const auto local = first.job_dir(submitted.id) / "checkpoints" / "step-000000000001.ckpt";
    EXPECT_EQ(sha, sha_of(local));
    // What the restarted agent sent: the checkpoint less the parts sent before the restart.
    double sent_mb = -1;
    std::istringstream log(read_file_bytes(root / "machine-again.log"));
    for (std::string line; std::getline(log, line);)
        if (auto at = line.find("step-000000000001.ckpt ("); at != std::string::npos)
            sent_mb = std::atof(line.c_str() + at + 24);
    const double whole_mb = 30.0 * 1048576 / 1e6;
    const double part_mb = 5.0 * 1048576 / 1e6;
    std::printf(
        "[ restart ] %zu parts of 5 MiB were up before the restart; %.1f of %.1f MB "
        "sent after it\n",
        parts_before, sent_mb, whole_mb);
    EXPECT_GT(sent_mb, 0) << read_file_bytes(root / "machine-again.log");
    EXPECT_LE(sent_mb, whole_mb - static_cast<double>(parts_before) * part_mb + 0.05);
}
