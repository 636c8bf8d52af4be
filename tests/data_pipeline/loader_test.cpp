#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include <opencv2/imgproc.hpp>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/loader/batch_loader.h"
#include "core/data/synth/synth.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using namespace crucible;
using namespace crucible::data;

namespace {

constexpr int kImages = 14;

class Loader : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = new fs::path(test_support::scratch_dir("loader"));
        fs::remove_all(*dir_);
        SynthOptions o;
        o.train = kImages;
        o.val = 0;
        o.classes = 4;
        o.imgsz = 80;
        o.seed = 21;
        write_synth_dataset(*dir_, o);
        samples_ = new std::vector<LoaderSample>;
        for (int i = 0; i < kImages; ++i) {
            char name[32];
            std::snprintf(name, sizeof name, "%06d.jpg", i);
            samples_->push_back(
                {*dir_ / "images" / "train" / name, make_synth_sample(o, "train", i).boxes});
        }
    }
    static void TearDownTestSuite() {
        fs::remove_all(*dir_);
        delete dir_;
        delete samples_;
    }

    static LoaderOptions options(int workers) {
        LoaderOptions o;
        o.batch_size = 4;
        o.workers = workers;
        o.prefetch = 2;
        o.seed = 99;
        o.epochs = 3;
        o.augment_options.imgsz = 64;
        o.augment_options.close_mosaic = 1;
        return o;
    }

    static fs::path* dir_;
    static std::vector<LoaderSample>* samples_;
};

fs::path* Loader::dir_ = nullptr;
std::vector<LoaderSample>* Loader::samples_ = nullptr;

std::uint64_t checksum(const Batch& b) {
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&](const void* data, std::size_t n) {
        const auto* p = static_cast<const unsigned char*>(data);
        for (std::size_t i = 0; i < n; ++i)
            h = (h ^ p[i]) * 1099511628211ull;
    };
    mix(b.pixels.data(), b.pixels.size());
    mix(b.boxes.data(), b.boxes.size() * sizeof(float));
    mix(b.sample_ids.data(), b.sample_ids.size() * sizeof(std::int64_t));
    mix(&b.size, sizeof b.size);
    return h;
}

std::vector<std::uint64_t> run_epochs(BatchLoader& loader, int epochs, bool recycle = false) {
    std::vector<std::uint64_t> sums;
    for (int e = 0; e < epochs; ++e) {
        loader.start_epoch({e, 0});
        while (auto b = loader.next()) {
            sums.push_back(checksum(*b));
            if (recycle) loader.recycle(std::move(*b));
        }
    }
    return sums;
}

}  // namespace

TEST_F(Loader, BatchesAreIdenticalForAnyThreadCountAndWithCache) {
    BatchLoader serial(*samples_, options(0));
    const auto ref = run_epochs(serial, 3);  // epoch 2 is past close_mosaic: no mosaic
    ASSERT_EQ(ref.size(), 3u * 4u);          // 14 images in batches of 4
    BatchLoader one(*samples_, options(1));
    EXPECT_EQ(run_epochs(one, 3), ref);
    BatchLoader two(*samples_, options(2));
    EXPECT_EQ(run_epochs(two, 3), ref);
    LoaderOptions cached = options(2);
    cached.cache = true;
    BatchLoader with_cache(*samples_, cached);
    EXPECT_EQ(run_epochs(with_cache, 3, /*recycle=*/true), ref);
    EXPECT_EQ(run_epochs(with_cache, 3, /*recycle=*/true),
              ref);  // from the cache, into recycled buffers
    // Another seed gives other batches.
    LoaderOptions other = options(2);
    other.seed = 100;
    BatchLoader reseeded(*samples_, other);
    EXPECT_NE(run_epochs(reseeded, 1), std::vector<std::uint64_t>(ref.begin(), ref.begin() + 4));
}

TEST_F(Loader, UncachedTrainingDecodesEachImageAboutOnce) {
    // Mosaic partners come from the samples just before in the epoch's order, which are still
    // decoded: an epoch reads each image once, not once per mosaic it appears in (about 4x).
    BatchLoader serial(*samples_, options(0));
    run_epochs(serial, 1);
    EXPECT_EQ(serial.stats().decoded, kImages);
    // A window smaller than the dataset: batch 1 draws from the last 8 samples. 4 copies of the
    // images are 56 samples; partners drawn from all of them would decode about 3 times as often.
    std::vector<LoaderSample> copies;
    for (int k = 0; k < 4; ++k)
        copies.insert(copies.end(), samples_->begin(), samples_->end());
    const auto n = static_cast<std::int64_t>(copies.size());
    LoaderOptions narrow = options(0);
    narrow.batch_size = 1;
    ASSERT_EQ(mosaic_partner_window(n, narrow.batch_size), 8);
    BatchLoader one_by_one(copies, narrow);
    run_epochs(one_by_one, 1);
    EXPECT_GE(one_by_one.stats().decoded, n);
    EXPECT_LE(one_by_one.stats().decoded, n + n / 10);
    // Two threads may decode the same partner at once, rarely.
    BatchLoader two(copies, options(2));
    run_epochs(two, 1);
    EXPECT_LE(two.stats().decoded, n + n / 2);
    // The window rule (the reference's buffer size).
    EXPECT_EQ(mosaic_partner_window(14, 4), 14);
    EXPECT_EQ(mosaic_partner_window(10000, 16), 128);
    EXPECT_EQ(mosaic_partner_window(10000, 256), 1000);
}

TEST_F(Loader, OrderIsAPermutationFromSeedAndEpoch) {
    BatchLoader a(*samples_, options(0)), b(*samples_, options(2));
    const auto o0 = a.epoch_order(0);
    EXPECT_EQ(o0, b.epoch_order(0));
    EXPECT_NE(o0, a.epoch_order(1));
    std::set<std::int64_t> ids(o0.begin(), o0.end());
    EXPECT_EQ(ids.size(), static_cast<std::size_t>(kImages));
    EXPECT_EQ(*ids.rbegin(), kImages - 1);
    // The batches carry the ids of that order.
    a.start_epoch({0, 0});
    std::vector<std::int64_t> seen;
    while (auto batch = a.next())
        seen.insert(seen.end(), batch->sample_ids.begin(), batch->sample_ids.end());
    EXPECT_EQ(seen, o0);
}

TEST_F(Loader, BatchLayoutIsRgbNchwWithNormalizedBoxRows) {
    LoaderOptions o = options(1);
    o.augment = false;  // letterbox only: the batch must equal make_sample's image
    BatchLoader loader(*samples_, o);
    loader.start_epoch({0, 0});
    auto b = loader.next();
    ASSERT_TRUE(b);
    ASSERT_EQ(b->size, 4);
    const int s = 64;
    ASSERT_EQ(b->pixels.size(), 4u * 3 * s * s);
    const LabeledImage ref = loader.make_sample(0, b->sample_ids[1]);
    const std::uint8_t* img1 = b->pixels.data() + 3 * s * s;
    for (int y = 0; y < s; y += 7)
        for (int x = 0; x < s; x += 5) {
            const cv::Vec3b bgr = ref.image.at<cv::Vec3b>(y, x);
            EXPECT_EQ(img1[0 * s * s + y * s + x], bgr[2]);
            EXPECT_EQ(img1[1 * s * s + y * s + x], bgr[1]);
            EXPECT_EQ(img1[2 * s * s + y * s + x], bgr[0]);
        }
    std::size_t boxes_of_1 = 0;
    for (std::int64_t r = 0; r < b->box_count(); ++r) {
        const float* row = &b->boxes[static_cast<std::size_t>(r) * 6];
        EXPECT_GE(row[0], 0);
        EXPECT_LT(row[0], 4);
        for (int k = 2; k < 6; ++k) {
            EXPECT_GE(row[k], 0);
            EXPECT_LE(row[k], 1);
        }
        boxes_of_1 += row[0] == 1;
    }
    EXPECT_EQ(boxes_of_1, ref.boxes.size());
    EXPECT_EQ(b->position, (DataPosition{0, 4}));
}

TEST_F(Loader, ResumingAtADataPositionGivesTheRemainingBatches) {
    BatchLoader full(*samples_, options(2));
    full.start_epoch({1, 0});
    std::vector<Batch> all;
    while (auto b = full.next())
        all.push_back(std::move(*b));
    ASSERT_EQ(all.size(), 4u);
    const DataPosition resume = all[1].position;
    EXPECT_EQ(resume, (DataPosition{1, 8}));
    BatchLoader later(*samples_, options(1));
    later.start_epoch(resume);
    std::vector<Batch> rest;
    while (auto b = later.next())
        rest.push_back(std::move(*b));
    ASSERT_EQ(rest.size(), 2u);
    for (std::size_t i = 0; i < rest.size(); ++i) {
        EXPECT_EQ(checksum(rest[i]), checksum(all[i + 2]));
        EXPECT_EQ(rest[i].position, all[i + 2].position);
    }
    EXPECT_EQ(rest.back().position, (DataPosition{1, kImages}));
    EXPECT_THROW(later.start_epoch({1, kImages + 1}), InputError);
}

TEST_F(Loader, RanksMakeDisjointSlicesOfTheSameGlobalBatches) {
    // 14 images in global batches of 4 (the last holds 2), split over 3 ranks: each rank's
    // images, in rank order, are byte for byte the images one process puts in that batch.
    BatchLoader whole(*samples_, options(1));
    whole.start_epoch({0, 0});
    std::vector<Batch> global;
    while (auto b = whole.next())
        global.push_back(std::move(*b));
    ASSERT_EQ(global.size(), 4u);
    constexpr int kRanks = 3;
    std::vector<std::vector<Batch>> shards(kRanks);
    for (int r = 0; r < kRanks; ++r) {
        LoaderOptions o = options(r % 2);
        o.shard = r;
        o.shards = kRanks;
        BatchLoader rank(*samples_, o);
        EXPECT_EQ(rank.batches_in_epoch(), 4);
        rank.start_epoch({0, 0});
        while (auto b = rank.next())
            shards[static_cast<std::size_t>(r)].push_back(std::move(*b));
        ASSERT_EQ(shards[static_cast<std::size_t>(r)].size(), 4u) << "rank " << r;
    }
    for (std::size_t k = 0; k < global.size(); ++k) {
        PixelBuffer pixels;
        std::vector<std::int64_t> ids;
        for (const auto& rank : shards) {
            const Batch& b = rank[k];
            EXPECT_EQ(b.position, global[k].position);  // positions stay global
            pixels.insert(pixels.end(), b.pixels.begin(), b.pixels.end());
            ids.insert(ids.end(), b.sample_ids.begin(), b.sample_ids.end());
        }
        EXPECT_EQ(ids, global[k].sample_ids) << "batch " << k;
        EXPECT_TRUE(pixels == global[k].pixels) << "batch " << k;
    }
    // 4 images over 3 ranks: 1, 1, 2; the last batch's 2 images: 0, 1, 1.
    EXPECT_EQ(shards[0][0].size, 1);
    EXPECT_EQ(shards[2][0].size, 2);
    EXPECT_EQ(shards[0][3].size, 0);
    LoaderOptions bad = options(0);
    bad.shard = 3;
    bad.shards = 3;
    EXPECT_THROW(BatchLoader(*samples_, bad), InputError);
}

TEST_F(Loader, BadSamplesAreSkippedCountedAndReported) {
    std::vector<LoaderSample> samples = *samples_;
    const fs::path empty = *dir_ / "empty.jpg";
    { std::ofstream(empty, std::ios::binary); }
    const fs::path truncated = *dir_ / "truncated.jpg";
    {
        const std::string bytes = read_file_bytes(samples[0].path);
        std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    }
    samples.push_back({*dir_ / "missing.jpg", {}});
    samples.push_back({empty, {}});
    samples.push_back({truncated, {}});
    std::mutex m;
    std::set<std::string> reported;
    for (bool cache : {false, true}) {
        reported.clear();
        LoaderOptions o = options(2);
        o.cache = cache;
        BatchLoader loader(samples, o, [&](const BadSample& bad) {
            std::lock_guard lock(m);
            EXPECT_FALSE(bad.message.empty());
            reported.insert(bad.path.filename().string());
        });
        std::int64_t images = 0;
        for (int e = 0; e < 2; ++e) {
            loader.start_epoch({e, 0});
            while (auto b = loader.next()) {
                images += b->size;
                EXPECT_EQ(b->pixels.size(), static_cast<std::size_t>(b->size) * 3 * 64 * 64);
                for (std::int64_t id : b->sample_ids)
                    EXPECT_LT(id, kImages);
            }
        }
        EXPECT_EQ(images, 2 * kImages);
        const LoaderStats st = loader.stats();
        EXPECT_EQ(st.skipped, 6);
        EXPECT_EQ(st.bad_images, 3);
        EXPECT_EQ(st.images, 2 * kImages);
        EXPECT_EQ(reported, (std::set<std::string>{"missing.jpg", "empty.jpg", "truncated.jpg"}));
        // The same reports wait for a consumer that takes them on its own thread, once each.
        const auto bad_list = loader.take_bad_samples();
        EXPECT_EQ(bad_list.size(), 3u);
        std::set<std::string> taken;
        for (const auto& bad : bad_list)
            taken.insert(bad.path.filename().string());
        EXPECT_EQ(taken, reported);
        EXPECT_TRUE(loader.take_bad_samples().empty());
    }
}

TEST_F(Loader, StopsCleanlyWhenTheConsumerLeavesEarlyOrRestarts) {
    for (int round = 0; round < 5; ++round) {
        LoaderOptions o = options(2);
        o.prefetch = 1;
        BatchLoader loader(*samples_, o);
        loader.start_epoch({0, 0});
        ASSERT_TRUE(loader.next());
        loader.start_epoch({1, 4});  // restart mid-way: stale batches are dropped
        auto b = loader.next();
        ASSERT_TRUE(b);
        EXPECT_EQ(b->position, (DataPosition{1, 8}));
    }                                         // destructor joins with work still queued
    BatchLoader idle(*samples_, options(2));  // never started
    SUCCEED();
}
