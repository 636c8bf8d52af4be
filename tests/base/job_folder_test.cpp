// The job folder's layout and its stop-request file: one home for both (core/base).
#include "core/base/job_folder.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/base/file_io.h"
#include "core/base/job_control.h"
#include "tests/support/temp_dir.h"

namespace crucible {
namespace {

class JobFolderTest : public ::testing::Test {
  protected:
    void SetUp() override {
        job_.dir = test_support::scratch_dir("job_folder");
        job_.create();
    }
    void TearDown() override { std::filesystem::remove_all(job_.dir); }
    JobFolder job_;
};

TEST_F(JobFolderTest, CreateMakesCheckpointsAndWeightsAndNamesEveryFileInside) {
    EXPECT_TRUE(std::filesystem::is_directory(job_.checkpoints()));
    EXPECT_TRUE(std::filesystem::is_directory(job_.weights()));
    for (const auto& p :
         {job_.spec(), job_.events(), job_.control(), job_.inbox(), job_.record(),
          job_.worker_log(), job_.results_csv(), job_.checkpoints(), job_.artifacts()})
        EXPECT_EQ(p.parent_path(), job_.dir) << path_to_utf8(p);
    EXPECT_EQ(job_.validation_report().parent_path(), job_.artifacts());
    EXPECT_EQ(JobFolder{}.validation_report().generic_string(),
              std::string("artifacts/") + kValidationReportArtifact);
}

TEST_F(JobFolderTest, BookkeepingIsNeverAnArtifact) {
    const JobFolder rel{};
    EXPECT_TRUE(JobFolder::is_bookkeeping(rel.record()));
    EXPECT_TRUE(JobFolder::is_bookkeeping(rel.control()));
    EXPECT_TRUE(JobFolder::is_bookkeeping(rel.mirror_state()));
    EXPECT_TRUE(JobFolder::is_bookkeeping(rel.inbox() / "0001.json"));
    EXPECT_TRUE(JobFolder::is_bookkeeping(rel.weights() / "last.safetensors.tmp"));
    EXPECT_FALSE(JobFolder::is_bookkeeping(rel.events()));
    EXPECT_FALSE(JobFolder::is_bookkeeping(rel.validation_report()));
    EXPECT_FALSE(JobFolder::is_bookkeeping(rel.weights() / "best.safetensors"));
    EXPECT_FALSE(JobFolder::is_bookkeeping({}));
}

TEST_F(JobFolderTest, StopRequestsRoundTripAndAreTakenOnce) {
    EXPECT_EQ(take_stop_request(job_), StopRequest::None);
    for (const StopRequest r : {StopRequest::Pause, StopRequest::Cancel, StopRequest::Checkpoint}) {
        write_stop_request(job_, r);
        EXPECT_EQ(parse_stop_request(stop_request_name(r)), r);
        EXPECT_EQ(take_stop_request(job_), r);
        EXPECT_FALSE(std::filesystem::exists(job_.control()));
        EXPECT_EQ(take_stop_request(job_), StopRequest::None);
    }
    write_stop_request(job_, StopRequest::Cancel);
    clear_stop_request(job_);
    EXPECT_EQ(take_stop_request(job_), StopRequest::None);
    EXPECT_FALSE(parse_stop_request("none"));
    EXPECT_FALSE(parse_stop_request("PAUSE"));
}

TEST_F(JobFolderTest, AnUnreadableRequestStillStopsSafely) {
    for (const std::string text : {"not json", "{\"request\": \"reboot\"}", "[1, 2]", ""}) {
        std::ofstream(job_.control(), std::ios::binary) << text;
        EXPECT_EQ(take_stop_request(job_), StopRequest::Checkpoint) << text;
        EXPECT_FALSE(std::filesystem::exists(job_.control()));
    }
}

// The checkpoint mirror and the checkpoint store read and write step file names the same way.
TEST(JobFolderNames, StepCheckpointNamesRoundTrip) {
    for (std::int64_t step : {0LL, 42LL, 999999999999LL, 123456789012345LL}) {
        const std::string name = JobFolder::step_checkpoint_name(step);
        EXPECT_EQ(JobFolder::step_of_checkpoint(name), step) << name;
    }
    EXPECT_EQ(JobFolder::step_checkpoint_name(42), "step-000000000042.ckpt");
    for (const char* other :
         {"best.ckpt", "step-42.ckpt", "step-000000000042.ckpt.tmp-1", "step-00000000004x.ckpt",
          "step-.ckpt", "step-0000000000420000000.ckpt"})
        EXPECT_FALSE(JobFolder::step_of_checkpoint(other)) << other;
}

}  // namespace
}  // namespace crucible
