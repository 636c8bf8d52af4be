#include "core/jobs/retention.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/base/event.h"
#include "tests/agent/agent_test_util.h"

using namespace crucible;
using namespace crucible::jobs;

TEST(Retention, RemovesOldCheckpointsAndUnreferencedBlobsOnly) {
    auto data = test::fresh_dir("retention");
    JobRegistry registry(data / "jobs");
    JobRecord old_done;
    old_done.task = "t";
    std::string done_id = registry.add(old_done).id;
    registry.update(done_id, [](JobRecord& j) {
        j.state = JobState::Succeeded;
        j.finished = 1000;
    });
    JobRecord running;
    running.task = "t";
    std::string run_id = registry.add(running).id;
    registry.update(run_id, [](JobRecord& j) { j.state = JobState::Running; });
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
