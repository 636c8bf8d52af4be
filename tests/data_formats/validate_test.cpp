#include "core/data/validate.h"

#include <gtest/gtest.h>

#include "tests/data_formats/test_util.h"

namespace crucible::data {
namespace {

TEST(Validate, StatsAndJson) {
    test::TempDir dir;
    const auto yaml = test::write_yolo_dataset(
        dir.path(), {{"train", "a.jpg", 64, 64, "0 0.5 0.5 0.5 0.5\n1 0.1 0.1 0.02 0.02\n"},
                     {"train", "b.jpg", 64, 64, "0 0.5 0.5 0.9 0.9\n"},
                     {"train", "bad.jpg", 64, 64, "0 0.5 0.5\n"},
                     {"val", "c.jpg", 64, 64, "-"}});
    const auto report = validate_dataset(yaml);
    EXPECT_FALSE(report.ok());
    EXPECT_EQ(report.format, "yolo");
    EXPECT_EQ(report.stats.images, 3u);
    EXPECT_EQ(report.stats.dropped_images, 1u);
    EXPECT_EQ(report.stats.background_images, 1u);
    EXPECT_EQ(report.stats.images_per_split.at("train"), 2u);
    EXPECT_EQ(report.stats.images_per_split.at("val"), 1u);
    EXPECT_EQ(report.stats.instances_per_class, (std::vector<std::size_t>{2, 1, 0}));
    EXPECT_EQ(report.stats.images_per_class, (std::vector<std::size_t>{2, 1, 0}));
    // Areas 0.25 -> bin [0.25,0.5), 0.0004 -> [0.0001,0.001), 0.81 -> last bin.
    EXPECT_EQ(report.stats.box_area_histogram[1], 1u);
    EXPECT_EQ(report.stats.box_area_histogram[6], 1u);
    EXPECT_EQ(report.stats.box_area_histogram[7], 1u);
    const auto j = report.to_json();
    EXPECT_EQ(j["errors"], report.errors());
    EXPECT_EQ(j["classes"][0]["instances"], 2);
    EXPECT_EQ(j["problems"][0]["where"], "labels/train/bad.txt:1");
    const auto text = report.to_text();
    EXPECT_NE(text.find("labels/train/bad.txt:1: error:"), std::string::npos) << text;
    EXPECT_NE(text.find("1 background"), std::string::npos) << text;
}

TEST(Validate, ReportsImageAndLabelProblemsOfOneImage) {
    test::TempDir dir;
    const auto yaml =
        test::write_yolo_dataset(dir.path(), {{"train", "a.jpg", 32, 32, "0 0.5 0.5 0.2\n"}});
    test::write_bytes(dir / "images/train/a.jpg", "");
    const auto report = validate_dataset(yaml);
    bool image = false, label = false;
    for (const auto& p : report.problems) {
        image =
            image || (p.where == "images/train/a.jpg" && p.what.find("empty") != std::string::npos);
        label = label || p.where == "labels/train/a.txt:1";
    }
    EXPECT_TRUE(image) << report.to_text();
    EXPECT_TRUE(label) << report.to_text();
    EXPECT_EQ(report.stats.dropped_images, 1u);
}

}  // namespace
}  // namespace crucible::data
