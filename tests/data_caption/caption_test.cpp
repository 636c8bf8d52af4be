// Caption datasets (core/data/caption_*): tag handling, buckets, and folders full of bad files.
#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/caption_buckets.h"
#include "core/data/caption_dataset.h"
#include "core/data/caption_image.h"
#include "core/data/caption_text.h"
#include "core/data/image_io.h"
#include "tests/support/temp_dir.h"

namespace crucible::data {
namespace {
namespace fs = std::filesystem;

using test_support::TempDir;

void write_text(const fs::path& p, const std::string& s) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << s;
}

void write_png(const fs::path& p, int w, int h, int value = 128) {
    fs::create_directories(p.parent_path());
    write_image(p, cv::Mat(h, w, CV_8UC3, cv::Scalar(value, 60, 200)));
}

TEST(CaptionText, SplitsAndJoinsTags) {
    EXPECT_EQ(split_tags(" a cat , ,red hat,\tsmiling  "),
              (std::vector<std::string>{"a cat", "red hat", "smiling"}));
    EXPECT_TRUE(split_tags("").empty());
    EXPECT_TRUE(split_tags(" , ,, ").empty());
    EXPECT_EQ(join_tags({"a", "b"}), "a, b");
}

TEST(CaptionText, KeepTokensStayFirstAndShuffleMovesTheRest) {
    CaptionOptions o;
    o.shuffle_tags = true;
    o.keep_tokens = 2;
    const std::string caption = "sks, dog, t1, t2, t3, t4, t5, t6";
    std::set<std::string> seen;
    Rng rng(7);
    for (int i = 0; i < 30; ++i) {
        const auto tags = split_tags(process_caption(caption, o, rng));
        ASSERT_EQ(tags.size(), 8u);
        EXPECT_EQ(tags[0], "sks");
        EXPECT_EQ(tags[1], "dog");
        auto sorted = tags;
        std::sort(sorted.begin(), sorted.end());
        EXPECT_EQ(sorted,
                  (std::vector<std::string>{"dog", "sks", "t1", "t2", "t3", "t4", "t5", "t6"}));
        seen.insert(join_tags(tags));
    }
    EXPECT_GT(seen.size(), 10u);  // really shuffled
    // Same seed, same captions.
    Rng a(3), b(3);
    EXPECT_EQ(process_caption(caption, o, a), process_caption(caption, o, b));
}

TEST(CaptionText, DropoutRateIsRespected) {
    CaptionOptions o;
    o.caption_dropout = 0.25;
    Rng rng(11);
    int empty = 0;
    for (int i = 0; i < 4000; ++i)
        empty += process_caption("a, b", o, rng).empty() ? 1 : 0;
    EXPECT_NEAR(empty / 4000.0, 0.25, 0.03);
    o.caption_dropout = 0;
    EXPECT_EQ(process_caption("a, b", o, rng), "a, b");
    o.caption_dropout = 1;
    EXPECT_EQ(process_caption("a, b", o, rng), "");
}

TEST(CaptionText, PrefixIsKeptAndFrequencyCounts) {
    CaptionOptions o;
    o.prefix = "sks";
    o.shuffle_tags = true;
    Rng rng(1);
    EXPECT_EQ(split_tags(process_caption("x, y, z", o, rng)).at(0), "sks");
    const auto f = tag_frequency({"a, b", "b, c", ""});
    EXPECT_EQ(f.at("b"), 2);
    EXPECT_EQ(f.at("a"), 1);
    EXPECT_EQ(f.size(), 3u);
}

TEST(CaptionBuckets, SizesAreStepMultiplesWithinLimits) {
    BucketOptions o;  // 512, 256..1024, 64
    const auto buckets = make_buckets(o);
    ASSERT_FALSE(buckets.empty());
    bool square = false;
    for (const auto& b : buckets) {
        EXPECT_EQ(b.width % 64, 0);
        EXPECT_EQ(b.height % 64, 0);
        EXPECT_GE(std::min(b.width, b.height), 256);
        EXPECT_LE(std::max(b.width, b.height), 1024);
        EXPECT_LE(b.width * b.height, 512 * 512);
        square |= b.width == 512 && b.height == 512;
    }
    EXPECT_TRUE(square);
    EXPECT_EQ(assign_bucket(1000, 1000, buckets, o), (BucketSize{512, 512}));
    const BucketSize wide = assign_bucket(1920, 1080, buckets, o);
    EXPECT_GT(wide.width, wide.height);
    EXPECT_NEAR(static_cast<double>(wide.width) / wide.height, 1920.0 / 1080, 0.15);
    const BucketSize tall = assign_bucket(300, 1000, buckets, o);
    EXPECT_LT(tall.width, tall.height);
}

TEST(CaptionBuckets, NoUpscaleKeepsSmallImagesSmall) {
    BucketOptions o;
    o.no_upscale = true;
    const auto buckets = make_buckets(o);
    EXPECT_EQ(assign_bucket(300, 200, buckets, o), (BucketSize{256, 192}));
    EXPECT_EQ(assign_bucket(40, 40, buckets, o), (BucketSize{64, 64}));
    // Larger than the area: a regular bucket.
    EXPECT_EQ(assign_bucket(2000, 2000, buckets, o), (BucketSize{512, 512}));
    Rng rng(0);
    const CropPlan p = plan_crop(300, 200, {256, 192}, false, rng);
    EXPECT_LE(p.resized_width, 300);  // never enlarged
    EXPECT_GE(p.resized_width, 256);
    EXPECT_GE(p.resized_height, 192);
}

TEST(CaptionBuckets, BadOptionsAreRejectedNamingTheOption) {
    const std::vector<std::pair<BucketOptions, std::string>> cases = {
        {{512, 256, 1024, 0, false, true}, "bucket_step"},
        {{512, 256, 1024, 60, false, true}, "bucket_step"},
        {{100000, 256, 1024, 64, false, true}, "resolution"},
        {{512, 600, 1024, 64, false, true}, "min_bucket_size"},
        {{512, 256, 300, 64, false, true}, "max_bucket_size"},
    };
    for (const auto& [o, name] : cases) {
        try {
            make_buckets(o);
            ADD_FAILURE() << name << " accepted";
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW(assign_bucket(0, 10, make_buckets({}), {}), InputError);
}

TEST(CaptionBuckets, BatchesStayInOneBucketAndDependOnSeedAndEpoch) {
    std::vector<BucketSize> items;
    for (int i = 0; i < 23; ++i)
        items.push_back(i % 3 == 0 ? BucketSize{512, 512} : BucketSize{640, 384});
    const auto batches = bucket_batches(items, 4, 42, 0);
    std::multiset<std::size_t> all;
    for (const auto& b : batches) {
        ASSERT_FALSE(b.empty());
        EXPECT_LE(b.size(), 4u);
        for (auto i : b) {
            EXPECT_EQ(items[i], items[b[0]]);
            all.insert(i);
        }
    }
    EXPECT_EQ(all.size(), 23u);
    EXPECT_EQ(std::set<std::size_t>(all.begin(), all.end()).size(), 23u);
    EXPECT_EQ(batches, bucket_batches(items, 4, 42, 0));
    EXPECT_NE(batches, bucket_batches(items, 4, 42, 1));
    EXPECT_THROW(bucket_batches(items, 0, 1, 0), InputError);
}

// Tag shuffles, crops and batch orders come from the project's own generator (data::Rng), never
// from std::shuffle or std distributions, whose results differ between standard libraries: these
// exact values hold on every platform, so a run resumed on another one sees the same batches.
TEST(CaptionText, ShufflesAndBatchesAreTheSameOnEveryPlatform) {
    CaptionOptions o;
    o.shuffle_tags = true;
    o.keep_tokens = 1;
    Rng rng(2024);
    EXPECT_EQ(process_caption("sks, a, b, c, d, e", o, rng), "sks, a, e, c, b, d");
    Rng crop_rng(9);
    const CropPlan p = plan_crop(300, 200, {128, 128}, true, crop_rng);
    EXPECT_EQ(std::to_string(p.crop_x) + "," + std::to_string(p.crop_y), "55,0");
    std::vector<BucketSize> items(7, BucketSize{64, 64});
    const auto batches = bucket_batches(items, 3, 42, 1);
    std::string order;
    for (const auto& b : batches) {
        for (auto i : b)
            order += std::to_string(i) + " ";
        order += "| ";
    }
    EXPECT_EQ(order, "0 2 4 | 3 | 6 5 1 | ");
}

TEST(CaptionFolder, ReadsImagesCaptionsRepeatsAndTagFrequency) {
    TempDir dir;
    write_png(dir.path() / "a.png", 64, 48);
    write_text(dir.path() / "a.txt", "\xEF\xBB\xBF  red square, simple \r\n\nsecond line");
    write_png(dir.path() / "b.png", 32, 32);  // no caption
    write_png(dir.path() / "5_sks dog" / "c.png", 40, 80);
    write_text(dir.path() / "5_sks dog" / "c.txt", "sks dog, simple");
    write_png(dir.path() / "中文" / "图片.png", 16, 16);
    write_text(dir.path() / "中文" / "图片.txt", "一只猫");
    write_text(dir.path() / "notes.md", "not an image");
    const auto ds = load_caption_folder(dir.path());
    ASSERT_EQ(ds.items.size(), 4u) << (ds.problems.empty() ? "" : ds.problems[0].message);
    EXPECT_TRUE(ds.problems.empty());
    EXPECT_EQ(ds.missing_captions, 1);
    std::map<std::string, const CaptionItem*> by_name;
    for (const auto& i : ds.items)
        by_name[path_to_utf8(i.image.filename())] = &i;
    EXPECT_EQ(by_name.at("a.png")->caption, "red square, simple");
    EXPECT_EQ(by_name.at("a.png")->width, 64);
    EXPECT_EQ(by_name.at("a.png")->height, 48);
    EXPECT_EQ(by_name.at("b.png")->caption, "");
    EXPECT_EQ(by_name.at("c.png")->repeats, 5);
    EXPECT_EQ(by_name.at("图片.png")->caption, "一只猫");
    EXPECT_EQ(ds.epoch_size(), 3u + 5u);
    EXPECT_EQ(ds.tag_frequency.at("5_sks dog").at("simple"), 1);
    EXPECT_EQ(ds.tag_frequency.at(".").at("simple"), 1);
    EXPECT_EQ(folder_repeats("10_x"), 10);
    EXPECT_EQ(folder_repeats("x_10"), 1);
    EXPECT_EQ(folder_repeats("0_x"), 1);
    EXPECT_EQ(folder_repeats("99999999999_x"), 1);
}

TEST(CaptionFolder, HostileFilesAreSkippedWithReasons) {
    TempDir dir;
    write_png(dir.path() / "good.png", 32, 32);
    struct Case {
        std::string file;
        std::string bytes;
        std::string expect;  // part of the problem message
    };
    const std::string png_sig = "\x89PNG\r\n\x1a\n";
    std::vector<unsigned char> encoded;
    cv::Mat noise(64, 64, CV_8UC3);
    cv::randu(noise, 0, 255);
    cv::imencode(".png", noise, encoded);
    const std::string png_half(encoded.begin(),
                               encoded.begin() + static_cast<std::ptrdiff_t>(encoded.size() / 2));
    const std::vector<Case> cases = {
        {"empty.png", "", "empty"},
        {"garbage.jpg", "hello world, not a jpeg", ""},
        {"short_signature.png", png_sig.substr(0, 5), ""},
        {"cut_in_half.png", png_half, ""},
    };
    for (const auto& c : cases)
        write_text(dir.path() / c.file, c.bytes);
    // Captions that are not usable.
    write_png(dir.path() / "bad_utf8.png", 16, 16);
    write_text(dir.path() / "bad_utf8.txt", std::string("caf\xE9 au lait"));
    write_png(dir.path() / "huge_caption.png", 16, 16);
    write_text(dir.path() / "huge_caption.txt", std::string(70 * 1024, 'a'));
    write_png(dir.path() / "nul_byte.png", 16, 16);  // not "nul": a device name on Windows
    write_text(dir.path() / "nul_byte.txt", std::string("a\0b", 3));
    write_png(dir.path() / "dir_caption.png", 16, 16);
    fs::create_directories(dir.path() / "dir_caption.txt");
    // A link to a file outside the folder.
    TempDir outside;
    write_png(outside.path() / "secret.png", 16, 16);
    std::error_code ec;
    fs::create_symlink(outside.path() / "secret.png", dir.path() / "link.png", ec);

    const auto ds = load_caption_folder(dir.path());
    ASSERT_EQ(ds.items.size(), 1u);
    EXPECT_EQ(ds.items[0].image.filename(), "good.png");
    auto problem_of = [&](const std::string& name) -> std::string {
        for (const auto& p : ds.problems)
            if (p.path.filename() == name) return p.message;
        return "<none>";
    };
    for (const auto& c : cases) {
        EXPECT_NE(problem_of(c.file), "<none>") << c.file;
        EXPECT_NE(problem_of(c.file).find(c.expect), std::string::npos)
            << c.file << ": " << problem_of(c.file);
    }
    EXPECT_NE(problem_of("bad_utf8.txt").find("UTF-8"), std::string::npos);
    EXPECT_NE(problem_of("huge_caption.txt").find("larger than"), std::string::npos);
    EXPECT_NE(problem_of("nul_byte.txt").find("NUL"), std::string::npos);
    EXPECT_NE(problem_of("dir_caption.txt").find("regular file"), std::string::npos);
    if (!ec) {
        EXPECT_NE(problem_of("link.png").find("outside"), std::string::npos);
    }
}

TEST(CaptionFolder, UnusableFoldersAreInputErrors) {
    TempDir dir;
    EXPECT_THROW(load_caption_folder(dir.path() / "missing"), InputError);
    write_text(dir.path() / "file.txt", "x");
    EXPECT_THROW(load_caption_folder(dir.path() / "file.txt"), InputError);
    try {
        load_caption_folder(dir.path());
        ADD_FAILURE() << "empty folder accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("no usable images"), std::string::npos);
    }
    write_text(dir.path() / "broken.png", "xx");
    try {
        load_caption_folder(dir.path());
        ADD_FAILURE() << "folder of broken images accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("broken.png"), std::string::npos) << e.what();
    }
}

TEST(CaptionImage, CoversTheBucketAndFlips) {
    TempDir dir;
    cv::Mat img(60, 100, CV_8UC3, cv::Scalar(0, 0, 0));
    img(cv::Rect(0, 0, 50, 60)).setTo(cv::Scalar(255, 0, 0));  // left half blue (BGR)
    write_image(dir.path() / "x.png", img);
    Rng rng(0);
    const cv::Mat out = load_bucket_image(dir.path() / "x.png", {64, 64}, false, false, rng);
    ASSERT_EQ(out.cols, 64);
    ASSERT_EQ(out.rows, 64);
    EXPECT_EQ(out.type(), CV_8UC3);
    EXPECT_GT(out.at<cv::Vec3b>(32, 2)[2], 200);  // RGB: blue is channel 2, left
    EXPECT_LT(out.at<cv::Vec3b>(32, 61)[2], 50);
    const cv::Mat flipped = load_bucket_image(dir.path() / "x.png", {64, 64}, false, true, rng);
    EXPECT_LT(flipped.at<cv::Vec3b>(32, 2)[2], 50);
    EXPECT_GT(flipped.at<cv::Vec3b>(32, 61)[2], 200);
}

}  // namespace
}  // namespace crucible::data
