// The checkpoint container, the checkpoints/ folder, and the fault-injected full disk.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/engine/checkpoint_store.h"
#include "core/engine/checkpoint_writer.h"
#include "core/engine/fault.h"
#include "tests/support/temp_dir.h"

namespace crucible::engine {
namespace {

CheckpointData sample(int step) {
    CheckpointData d;
    d.meta = {{"step", step}, {"note", "naïve 训练"}};
    d.blobs["model"] = std::string(1000, static_cast<char>(step));
    d.blobs["empty"] = "";
    return d;
}

std::filesystem::path fresh_dir(const std::string& name) {
    return test_support::scratch_dir(name);
}

TEST(CheckpointFile, RoundTrip) {
    const std::string bytes = encode_checkpoint(sample(3));
    const CheckpointData back = decode_checkpoint(bytes, "x");
    EXPECT_EQ(back.meta, sample(3).meta);
    EXPECT_EQ(back.blobs, sample(3).blobs);
}

TEST(CheckpointFile, DamageIsDetected) {
    const std::string good = encode_checkpoint(sample(3));
    std::vector<std::string> bad = {"",
                                    "CRUCKPT1",
                                    good.substr(0, good.size() / 2),
                                    good.substr(0, good.size() - 1),
                                    good + "x",
                                    "XXXXXXXX" + good.substr(8)};
    std::string flipped = good;
    flipped[good.size() / 2] ^= 1;
    bad.push_back(flipped);
    std::string digest_flipped = good;
    digest_flipped.back() = digest_flipped.back() == '0' ? '1' : '0';
    bad.push_back(digest_flipped);
    for (const auto& b : bad) {
        try {
            decode_checkpoint(b, "ckpt");
            ADD_FAILURE() << "accepted a damaged checkpoint of " << b.size() << " bytes";
        } catch (const InputError& e) {
            EXPECT_EQ(e.where(), "ckpt");
        }
    }
}

TEST(CheckpointStore, KeepsLastKAndFallsBackPastCorruption) {
    const auto dir = fresh_dir("crucible_ckpt_store");
    CheckpointStore store(dir, 2);
    for (int step : {5, 10, 15})
        store.write_step(step, encode_checkpoint(sample(step)));
    auto files = store.step_files();
    ASSERT_EQ(files.size(), 2u);
    EXPECT_EQ(files[0].filename(), CheckpointStore::step_file_name(15));
    EXPECT_EQ(files[1].filename(), CheckpointStore::step_file_name(10));
    // Truncate the newest: resume must use step 10 and say why it skipped 15.
    const std::string newest = read_file_bytes(files[0]);
    std::ofstream(files[0], std::ios::binary | std::ios::trunc).write(newest.data(), 100);
    std::vector<std::string> rejected;
    auto loaded = store.load_newest_valid(rejected);
    ASSERT_TRUE(loaded);
    EXPECT_EQ(loaded->data.meta["step"], 10);
    ASSERT_EQ(rejected.size(), 1u);
    EXPECT_NE(rejected[0].find("truncated"), std::string::npos) << rejected[0];
    // Garbage in both: nothing to resume from.
    std::ofstream(files[1], std::ios::binary | std::ios::trunc) << "garbage";
    rejected.clear();
    EXPECT_FALSE(store.load_newest_valid(rejected));
    EXPECT_EQ(rejected.size(), 2u);
    std::filesystem::remove_all(dir);
}

TEST(CheckpointStore, DiskFullKeepsThePreviousCheckpoint) {
    const auto dir = fresh_dir("crucible_ckpt_full");
    crucible::set_environment_variable("CRUCIBLE_FAULT", "disk_full:1");
    reload_fault_plan();
    CheckpointStore store(dir, 3);
    std::filesystem::path first;
    try {
        crucible::set_environment_variable("CRUCIBLE_FAULT", "disk_full:1000000");
        reload_fault_plan();
        first = store.write_step(1, encode_checkpoint(sample(1)));
        crucible::set_environment_variable("CRUCIBLE_FAULT",
                                           "disk_full:0");  // every write from now on fails
        reload_fault_plan();
        try {
            store.write_step(2, encode_checkpoint(sample(2)));
            ADD_FAILURE() << "the injected full disk did not fail the write";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("No space left"), std::string::npos);
        }
    } catch (...) {
        crucible::unset_environment_variable("CRUCIBLE_FAULT");
        reload_fault_plan();
        throw;
    }
    crucible::unset_environment_variable("CRUCIBLE_FAULT");
    reload_fault_plan();
    auto files = store.step_files();
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(read_checkpoint_file(files[0]).meta["step"], 1);
    for (const auto& e : std::filesystem::directory_iterator(dir))
        EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace crucible::engine

namespace crucible::engine {
namespace {

// Background writes: outcomes come back in order, each durable and valid; best.ckpt is the same
// file as the step it names; keep-K pruning still applies; a failed write is an outcome with
// its reason, and the writer goes on.
TEST(CheckpointWriter, BackgroundWritesReportInOrderAndLinkBest) {
    const auto dir = fresh_dir("crucible_ckpt_writer");
    CheckpointStore store(dir / "checkpoints", 2);
    std::vector<CheckpointWriter::Outcome> outcomes;
    {
        CheckpointWriter writer(store, /*synchronous=*/false);
        for (int step : {3, 6, 9}) {
            auto done = writer.submit(step, encode_checkpoint(sample(step)), step == 6);
            outcomes.insert(outcomes.end(), done.begin(), done.end());
        }
        auto rest = writer.finish_all();
        outcomes.insert(outcomes.end(), rest.begin(), rest.end());
        EXPECT_TRUE(writer.finish_all().empty());
    }
    ASSERT_EQ(outcomes.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(outcomes[i].step, static_cast<std::int64_t>(3 * (i + 1)));
        EXPECT_TRUE(outcomes[i].error.empty()) << outcomes[i].error;
    }
    EXPECT_TRUE(outcomes[1].best);
    const auto files = store.step_files();
    ASSERT_EQ(files.size(), 2u);
    EXPECT_EQ(files[0].filename(), CheckpointStore::step_file_name(9));
    const auto best = decode_checkpoint(read_file_bytes(dir / "checkpoints" / "best.ckpt"), "best");
    EXPECT_EQ(best.meta["step"], 6);  // step 6's file is pruned; its second name stays

    // A store whose folder cannot be made: the outcome carries the reason.
    std::ofstream(dir / "blocked") << "a file where the folder should be";
    CheckpointStore blocked(dir / "blocked" / "checkpoints", 2);
    CheckpointWriter writer(blocked, false);
    writer.submit(12, encode_checkpoint(sample(12)), true);
    const auto failed = writer.finish_all();
    ASSERT_EQ(failed.size(), 1u);
    EXPECT_FALSE(failed[0].error.empty());
    EXPECT_TRUE(failed[0].file.empty());
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace crucible::engine
