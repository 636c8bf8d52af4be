// Image tags beside a YOLO dataset (core/data/formats/image_tags_file.h): written with a
// snapshot's data.yaml, read back onto the same images; a table of hostile files, each reported
// naming the file and the entry, never a crash and never a lost dataset.
#include <gtest/gtest.h>

#include <functional>

#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/data/dataset_io.h"
#include "core/data/formats/image_tags_file.h"
#include "tests/data_formats/test_util.h"

namespace crucible::data {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::YoloImage;

fs::path two_images(const fs::path& dir) {
    return test::write_yolo_dataset(dir, {{"val", "a.jpg", 64, 48, "0 0.5 0.5 0.2 0.2\n"},
                                          {"val", "线 2.jpg", 64, 48, "1 0.5 0.5 0.2 0.2\n"}});
}

const ImageRecord& image_named(const DetectionDataset& d, const std::string& name) {
    for (const auto& im : d.images)
        if (path_to_utf8(im.path.filename()) == name) return im;
    throw std::runtime_error("no image " + name);
}

TEST(ImageTagsFile, WrittenWithTheDatasetAndReadBackOntoTheSameImages) {
    TempDir dir("tags");
    auto loaded = load_detection_dataset(two_images(dir / "src"));
    ASSERT_EQ(loaded.dataset.images.size(), 2u);
    for (auto& im : loaded.dataset.images)
        if (path_to_utf8(im.path.filename()) == "线 2.jpg")
            im.tags = {{"工位", "三"}, {"line", "B"}};
    const auto yaml =
        save_detection_dataset(loaded.dataset, dir / "out", DatasetFormat::Yolo, ImageFiles::Copy);
    ASSERT_TRUE(fs::exists(yaml.parent_path() / kImageTagsFileName));
    const Json file = read_json_file(yaml.parent_path() / kImageTagsFileName);
    EXPECT_EQ(file.size(), 1u) << "only the tagged image: " << file.dump();
    EXPECT_TRUE(file.contains("images/val/线 2.jpg")) << file.dump();

    const auto back = load_detection_dataset(yaml);
    for (const auto& problem : back.problems)
        EXPECT_EQ(problem.where.find("tags.json"), std::string::npos) << problem.what;
    EXPECT_EQ(image_named(back.dataset, "线 2.jpg").tags.at("工位"), "三");
    EXPECT_EQ(image_named(back.dataset, "线 2.jpg").tags.at("line"), "B");
    EXPECT_TRUE(image_named(back.dataset, "a.jpg").tags.empty());

    // No tags: no file.
    for (auto& im : loaded.dataset.images)
        im.tags.clear();
    const auto plain = save_detection_dataset(loaded.dataset, dir / "plain", DatasetFormat::Yolo,
                                              ImageFiles::Copy);
    EXPECT_FALSE(fs::exists(plain.parent_path() / kImageTagsFileName));
}

TEST(ImageTagsFile, HostileFilesAreReportedNamingTheEntryAndTheImagesStay) {
    struct Case {
        const char* what;
        std::string text;
        const char* names;    // expected in a problem's place or message
        bool tags_a = false;  // whether a.jpg still gets {"station": "1"}
    };
    const std::string good_a = R"("images/val/a.jpg": {"station": "1"})";
    const std::vector<Case> cases = {
        {"empty", "", "tags.json"},
        {"truncated", "{" + good_a.substr(0, 20), "tags.json"},
        {"an array", "[1, 2]", "must be a JSON object"},
        {"deeply nested", std::string(100000, '[') + std::string(100000, ']'), "nested"},
        {"not UTF-8", "{\"images/val/a\xff.jpg\": {}}", "tags.json"},
        {"path traversal", "{" + good_a + R"(, "../../etc/passwd": {"x": "1"}})", "path traversal",
         true},
        {"absolute path", "{" + good_a + R"(, "/etc/passwd": {"x": "1"}})", "absolute", true},
        {"no such image", "{" + good_a + R"(, "images/val/zz.jpg": {"x": "1"}})",
         "not an image of this dataset", true},
        {"tags a string", R"({"images/val/a.jpg": "station=1"})", "object of tags"},
        {"tag value a number", R"({"images/val/a.jpg": {"station": 1}})", "station"},
        {"tag value nested", R"({"images/val/a.jpg": {"station": {"n": "1"}}})", "station"},
        {"empty tag name", R"({"images/val/a.jpg": {"": "1"}})", "needs a name"},
        {"empty path", "{" + good_a + R"(, "": {"x": "1"}})", "inside the dataset", true},
    };
    for (const auto& c : cases) {
        TempDir dir("tags-hostile");
        const auto yaml = two_images(dir);
        test::write_bytes(yaml.parent_path() / kImageTagsFileName, c.text);
        LoadResult loaded;
        ASSERT_NO_THROW(loaded = load_detection_dataset(yaml)) << c.what;
        EXPECT_EQ(loaded.dataset.images.size(), 2u) << c.what << ": the images stay";
        bool named = false;
        for (const auto& p : loaded.problems)
            named |= (p.where + " " + p.what).find(c.names) != std::string::npos;
        EXPECT_TRUE(named) << c.what << ": "
                           << (loaded.problems.empty() ? std::string("no problem reported")
                                                       : loaded.problems.front().where + " " +
                                                             loaded.problems.front().what);
        const auto& a = image_named(loaded.dataset, "a.jpg");
        EXPECT_EQ(a.tags.count("station") == 1, c.tags_a) << c.what;
        EXPECT_TRUE(image_named(loaded.dataset, "线 2.jpg").tags.empty()) << c.what;
    }
}

}  // namespace
}  // namespace crucible::data
