#include "core/data/ops/dataset_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/dataset_io.h"
#include "tests/data_formats/test_util.h"

namespace crucible::data {
namespace {

// 100 images (paths only): class 0 common, class 1 in 10 images, class 2 in 5, 20 backgrounds.
DetectionDataset synthetic_records() {
    DetectionDataset d;
    d.root = "/data";
    d.class_names = {"a", "b", "c"};
    for (int i = 0; i < 100; ++i) {
        ImageRecord r;
        r.path = "img" + std::to_string(i) + ".jpg";
        if (i >= 20) r.boxes.push_back({0, 0.5, 0.5, 0.1, 0.1});
        if (i % 10 == 1) r.boxes.push_back({1, 0.4, 0.4, 0.1, 0.1});
        if (i % 20 == 3) r.boxes.push_back({2, 0.3, 0.3, 0.1, 0.1});
        d.images.push_back(r);
    }
    return d;
}

std::map<std::string, std::string> splits_by_path(const DetectionDataset& d) {
    std::map<std::string, std::string> out;
    for (const auto& r : d.images)
        out[r.path.string()] = r.split;
    return out;
}

TEST(Ops, StratifiedSplitIsDeterministicAndBalanced) {
    auto d = synthetic_records();
    split_train_val(d, 0.2, 42);
    std::size_t val = 0, val_b = 0, val_c = 0, val_bg = 0;
    for (const auto& r : d.images) {
        if (r.split != "val") {
            EXPECT_EQ(r.split, "train");
            continue;
        }
        ++val;
        if (r.boxes.empty()) ++val_bg;
        for (const auto& b : r.boxes) {
            val_b += b.cls == 1;
            val_c += b.cls == 2;
        }
    }
    EXPECT_EQ(val, 20u);
    EXPECT_EQ(val_c, 1u);  // 5 images with class 2 -> 1 in val
    EXPECT_GE(val_b, 1u);
    EXPECT_EQ(val_bg, 3u);  // 17 backgrounds (images 1, 3, 11 have boxes) -> 3

    // Same seed, shuffled input order: same assignment. Other seed: a different one.
    auto shuffled = synthetic_records();
    std::mt19937 g(1);
    std::shuffle(shuffled.images.begin(), shuffled.images.end(), g);
    split_train_val(shuffled, 0.2, 42);
    EXPECT_EQ(splits_by_path(d), splits_by_path(shuffled));
    auto other = synthetic_records();
    split_train_val(other, 0.2, 43);
    EXPECT_NE(splits_by_path(d), splits_by_path(other));
    EXPECT_THROW(split_train_val(other, 1.5, 1), InputError);
}

TEST(Ops, RemapMergeAndDeleteClasses) {
    auto d = synthetic_records();
    remap_classes(d, {{"a", "animal"}, {"b", "animal"}});
    EXPECT_EQ(d.class_names, (std::vector<std::string>{"animal", "c"}));
    EXPECT_EQ(d.images[21].boxes.size(), 2u);
    EXPECT_EQ(d.images[21].boxes[1].cls, 0);      // b merged into animal
    EXPECT_EQ(d.images[23].boxes.back().cls, 1);  // c moved from 2 to 1
    delete_classes(d, {"animal"});
    EXPECT_EQ(d.class_names, (std::vector<std::string>{"c"}));
    std::size_t boxes = 0;
    for (const auto& r : d.images) {
        boxes += r.boxes.size();
        for (const auto& b : r.boxes)
            EXPECT_EQ(b.cls, 0);
    }
    EXPECT_EQ(boxes, 5u);
    EXPECT_THROW(remap_classes(d, {{"nope", "x"}}), InputError);
}

TEST(Ops, MergeDatasetsUnifiesClassNames) {
    DetectionDataset a, b;
    a.root = "/a";
    a.class_names = {"cat", "dog"};
    a.images.push_back({"1.jpg", 0, 0, "", "train", {{1, 0.5, 0.5, 0.1, 0.1}}, {}});
    b.root = "/b";
    b.class_names = {"bird", "cat"};
    b.images.push_back(
        {"2.jpg", 0, 0, "", "val", {{0, 0.5, 0.5, 0.1, 0.1}, {1, 0.2, 0.2, 0.1, 0.1}}, {}});
    const auto m = merge_datasets(a, b);
    EXPECT_EQ(m.class_names, (std::vector<std::string>{"cat", "dog", "bird"}));
    ASSERT_EQ(m.images.size(), 2u);
    EXPECT_EQ(m.images[0].path, std::filesystem::path("/a/1.jpg"));
    EXPECT_EQ(m.images[0].boxes[0].cls, 1);
    EXPECT_EQ(m.images[1].path, std::filesystem::path("/b/2.jpg"));
    EXPECT_EQ(m.images[1].boxes[0].cls, 2);
    EXPECT_EQ(m.images[1].boxes[1].cls, 0);
}

TEST(Ops, DuplicatesAndManifest) {
    test::TempDir dir;
    const auto yaml =
        test::write_yolo_dataset(dir.path(), {{"train", "a.jpg", 32, 32, "0 0.5 0.5 0.2 0.2\n"},
                                              {"train", "b.jpg", 40, 32, "1 0.5 0.5 0.2 0.2\n"},
                                              {"val", "c.jpg", 32, 32, ""}});
    // c.jpg gets the bytes of a.jpg: a duplicate.
    std::filesystem::copy_file(dir / "images/train/a.jpg", dir / "images/val/c.jpg",
                               std::filesystem::copy_options::overwrite_existing);
    auto d = load_detection_dataset(yaml).dataset;
    const auto groups = find_duplicate_images(d);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0], (std::vector<std::size_t>{0, 2}));
    EXPECT_EQ(d.images[0].sha256.size(), 64u);

    const auto m1 = dataset_manifest(d);
    const std::string id1 = manifest_id(m1);
    EXPECT_EQ(id1.size(), 64u);
    EXPECT_EQ(m1["images"].size(), 3u);
    for (const auto& entry : m1["images"])  // sizes from the headers
        EXPECT_EQ(entry["width"], entry["path"] == "images/train/b.jpg" ? 40 : 32) << entry.dump();
    EXPECT_EQ(manifest_text(m1).find('\n'), std::string::npos);
    // Order of images and boxes does not change the id; a label change does.
    auto reordered = load_detection_dataset(yaml).dataset;
    std::reverse(reordered.images.begin(), reordered.images.end());
    EXPECT_EQ(manifest_id(dataset_manifest(reordered)), id1);
    reordered.images[0].boxes.push_back({0, 0.1, 0.1, 0.1, 0.1});
    EXPECT_NE(manifest_id(dataset_manifest(reordered)), id1);
    // A changed image file changes it too.
    test::write_bytes(dir / "images/train/b.jpg", test::encoded(".jpg", 40, 32, 99));
    auto changed = load_detection_dataset(yaml).dataset;
    EXPECT_NE(manifest_id(dataset_manifest(changed)), id1);

    EXPECT_EQ(remove_duplicate_images(d), 1u);
    EXPECT_EQ(d.images.size(), 2u);
}

}  // namespace
}  // namespace crucible::data
