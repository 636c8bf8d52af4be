#include "core/jobs/retention.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/base/event.h"
#include "core/base/file_io.h"
#include "tests/agent/agent_test_util.h"

using namespace crucible;
using namespace crucible::jobs;

TEST(Retention, RemovesOldCheckpointsAndUnreferencedBlobsOnly) {
    auto data = test::fresh_dir("retention");
    JobRegistry registry(data / "jobs");
    JobInfo old_done;
    old_done.task = "t";
    std::string done_id = registry.add(old_done).id;
    registry.update(done_id, [](JobInfo& j) {
        j.state = JobState::Succeeded;
        j.finished = 1000;
    });
    JobInfo running;
    running.task = "t";
    std::string run_id = registry.add(running).id;
    registry.update(run_id, [](JobInfo& j) { j.state = JobState::Running; });
    for (const auto& id : {done_id, run_id})
        for (const char* f : {"step_100.ckpt", "step_200.ckpt", "last.ckpt", "best.safetensors"})
            std::ofstream(registry.folder(id) / "checkpoints" / f) << "0123456789";
    auto blobs = data / "blobs";
    auto datasets = data / "datasets";
    std::filesystem::create_directories(blobs);
    std::filesystem::create_directories(datasets / "d1");
    std::string kept(64, 'a'), dropped(64, 'b');
    std::ofstream(blobs / kept) << "x";
    std::ofstream(blobs / dropped) << "yy";
    std::ofstream(datasets / "d1" / "manifest.json")
        << Json{{"files", Json::array({Json::array({"a.jpg", kept})})}}.dump();

    // Partial uploads: a stalled one (last written long ago) goes, a fresh one stays.
    std::filesystem::create_directories(blobs / "partial");
    auto stalled = blobs / "partial" / ("upload-" + std::string(40, 'c'));
    auto fresh = blobs / "partial" / std::string(64, 'd');
    std::ofstream(stalled) << "half";
    std::ofstream(fresh) << "half";
    std::filesystem::last_write_time(
        stalled, std::filesystem::file_time_type::clock::now() - std::chrono::hours(100));

    RetentionPolicy policy;
    policy.keep_unreferenced_blobs = std::chrono::hours(0);
    policy.keep_stalled_uploads = std::chrono::hours(72);
    auto report = apply_retention(registry, blobs, datasets, policy, unix_time_now());
    EXPECT_EQ(report.checkpoint_files_removed, 2u);
    EXPECT_EQ(report.blobs_removed, 1u);
    EXPECT_EQ(report.partial_uploads_removed, 1u);
    EXPECT_EQ(report.bytes_freed, 26u);
    EXPECT_FALSE(std::filesystem::exists(stalled));
    EXPECT_TRUE(std::filesystem::exists(fresh));
    auto done_ck = registry.folder(done_id) / "checkpoints";
    EXPECT_FALSE(std::filesystem::exists(done_ck / "step_100.ckpt"));
    EXPECT_TRUE(std::filesystem::exists(done_ck / "last.ckpt"));
    EXPECT_TRUE(std::filesystem::exists(done_ck / "best.safetensors"));
    EXPECT_TRUE(std::filesystem::exists(registry.folder(run_id) / "checkpoints" / "step_100.ckpt"));
    EXPECT_TRUE(std::filesystem::exists(blobs / kept));
    EXPECT_FALSE(std::filesystem::exists(blobs / dropped));
    std::filesystem::remove_all(data);
}

// Uploaded model files live on as <data>/inputs/<sha>/<name> (hard links to their blobs). They
// stay while a job that may still start, resume or was extended recently names them, and their
// blob counts as referenced meanwhile; inputs of jobs that ended long ago go.
TEST(Retention, JobInputsFollowTheJobsThatUseThem) {
    auto data = test::fresh_dir("retention_inputs");
    JobRegistry registry(data / "jobs");
    auto blobs = data / "blobs", datasets = data / "datasets", inputs = data / "inputs";
    std::filesystem::create_directories(blobs);
    std::filesystem::create_directories(datasets);
    const std::string queued_sha(64, '1'), old_sha(64, '2'), recent_sha(64, '3'), loose(64, '4');
    for (const auto& sha : {queued_sha, old_sha, recent_sha, loose}) {
        std::ofstream(blobs / sha) << "weights";
        std::filesystem::create_directories(inputs / sha);
        std::filesystem::create_hard_link(blobs / sha, inputs / sha / "yolov8n.pt");
        std::filesystem::last_write_time(
            inputs / sha, std::filesystem::file_time_type::clock::now() - std::chrono::hours(200));
        std::filesystem::last_write_time(
            blobs / sha, std::filesystem::file_time_type::clock::now() - std::chrono::hours(200));
    }
    auto add_job = [&](const std::string& sha, JobState state, double finished) {
        JobInfo j;
        j.task = "t";
        j.options = {{"model", path_to_utf8(inputs / sha / "yolov8n.pt")}, {"epochs", 3}};
        const std::string id = registry.add(j).id;
        registry.update(id, [&](JobInfo& r) {
            r.state = state;
            r.finished = finished;
        });
    };
    const double now = unix_time_now();
    add_job(queued_sha, JobState::Queued, 0);
    add_job(old_sha, JobState::Succeeded, now - 30 * 24 * 3600.0);
    add_job(recent_sha, JobState::Failed, now - 3600.0);

    RetentionPolicy policy;  // ended jobs: 7 days; unreferenced: 3 days
    auto report = apply_retention(registry, blobs, datasets, policy, now, inputs);
    EXPECT_EQ(report.inputs_removed, 2u);  // the old job's and the one no job names
    EXPECT_TRUE(std::filesystem::exists(inputs / queued_sha / "yolov8n.pt"));
    EXPECT_TRUE(std::filesystem::exists(inputs / recent_sha / "yolov8n.pt"));
    EXPECT_FALSE(std::filesystem::exists(inputs / old_sha));
    EXPECT_FALSE(std::filesystem::exists(inputs / loose));
    // Blobs of kept inputs are referenced; the other two were old and unreferenced.
    EXPECT_TRUE(std::filesystem::exists(blobs / queued_sha));
    EXPECT_TRUE(std::filesystem::exists(blobs / recent_sha));
    EXPECT_FALSE(std::filesystem::exists(blobs / old_sha));
    EXPECT_EQ(report.blobs_removed, 2u);
    // Linked bytes are freed once, with the blob: 2 blobs x 7 bytes.
    EXPECT_EQ(report.bytes_freed, 14u);

    // A fresh inputs folder (a submit creating it right now) stays although no job names it.
    std::filesystem::create_directories(inputs / loose);
    report = apply_retention(registry, blobs, datasets, policy, now, inputs);
    EXPECT_EQ(report.inputs_removed, 0u);
    EXPECT_TRUE(std::filesystem::exists(inputs / loose));
    std::filesystem::remove_all(data);
}
