// Table test of hostile datasets: each is rejected (or, where the format allows it, accepted)
// with a clear message naming the file, and nothing crashes.
#include <gtest/gtest.h>

#include <functional>

#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/data/validate.h"
#include "tests/data_formats/test_util.h"

namespace crucible::data {
namespace {

namespace fs = std::filesystem;
using test::write_bytes;
using test::write_yolo_dataset;

std::string be32(std::uint32_t v) {
    return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}

std::string png_claiming(std::uint32_t w, std::uint32_t h) {
    std::string b("\x89PNG\r\n\x1a\n", 8);
    b += be32(13) + "IHDR" + be32(w) + be32(h) + std::string("\x08\x02\x00\x00\x00", 5) + be32(0);
    b += be32(0) + "IEND" + be32(0xAE426082);
    return b;
}

const std::string kBox = "0 0.5 0.5 0.2 0.2\n";

struct Case {
    const char* name;
    std::function<fs::path(const fs::path&)>
        make;                       // builds the dataset, returns the path to validate
    bool ok;                        // no errors expected
    const char* where;              // part of the problem's where ("" = any)
    const char* what;               // part of its message ("" = none expected)
    std::size_t images = SIZE_MAX;  // usable images expected (SIZE_MAX = not checked)
};

fs::path one_image(const fs::path& d, const std::string& labels) {
    return write_yolo_dataset(
        d, {{"train", "a.jpg", 32, 32, labels}, {"train", "ok.jpg", 32, 32, kBox}});
}

const Case kCases[] = {
#ifndef _WIN32  // Windows file names are UTF-16: no such bytes
    {"non-UTF-8 file name",
     [](const fs::path& d) {
         const auto y = one_image(d, kBox);
         write_bytes(d / "images/train" / fs::path(std::string("bad\xff\xfe.jpg")),
                     test::encoded(".jpg", 32, 32));
         return y;
     },
     false, "\\xff\\xfe", "not valid UTF-8", 2},
#endif
    {"Chinese file names work",
     [](const fs::path& d) {
         return write_yolo_dataset(
             d, {{"train", "猫咪 照片.jpg", 32, 32, kBox}, {"val", "狗.png", 32, 32, kBox}},
             "names: [猫, 狗]\n");
     },
     true, "", "", 2},
    {"0-byte JPEG",
     [](const fs::path& d) {
         const auto y = one_image(d, kBox);
         write_bytes(d / "images/train/a.jpg", "");
         return y;
     },
     false, "images/train/a.jpg", "empty file", 1},
    {"PNG claiming 30000x30000",
     [](const fs::path& d) {
         const auto y = one_image(d, kBox);
         write_bytes(d / "images/train/huge.png", png_claiming(30000, 30000));
         return y;
     },
     false, "images/train/huge.png", "30000x30000", 2},
    {"label file is a directory",
     [](const fs::path& d) {
         const auto y = one_image(d, "-");
         fs::create_directories(d / "labels/train/a.txt");
         return y;
     },
     false, "labels/train/a.txt", "is a directory", 1},
    {"CRLF and UTF-8 BOM accepted",
     [](const fs::path& d) {
         return one_image(d,
                          "\xEF\xBB\xBF"
                          "0 0.5 0.5 0.2 0.2\r\n1 0.3 0.3 0.1 0.1\r\n");
     },
     true, "", "", 2},
    {"scientific notation accepted",
     [](const fs::path& d) { return one_image(d, "0 5e-1 0.5E0 2e-1 1E-1\n"); }, true, "", "", 2},
    {"negative size", [](const fs::path& d) { return one_image(d, "0 0.5 0.5 -0.2 0.2\n"); }, false,
     "labels/train/a.txt:1", "negative", 1},
    {"NaN", [](const fs::path& d) { return one_image(d, kBox + "0 nan 0.5 0.2 0.2\n"); }, false,
     "labels/train/a.txt:2", "not a finite number", 1},
    {"coordinate above 1", [](const fs::path& d) { return one_image(d, "0 0.5 1.2 0.2 0.2\n"); },
     false, "labels/train/a.txt:1", "above 1", 1},
    {"wrong column count", [](const fs::path& d) { return one_image(d, "0 0.5 0.5 0.2\n"); }, false,
     "labels/train/a.txt:1", "found 4", 1},
    {"non-number", [](const fs::path& d) { return one_image(d, "\n\n0 0.5 0,5 0.2 0.2\n"); }, false,
     "labels/train/a.txt:3", "is not a number", 1},
    {"binary garbage label",
     [](const fs::path& d) { return one_image(d, std::string("\x00\xff\x01 x y z w\n", 12)); },
     false, "labels/train/a.txt:1", "", 1},
    {"unknown class id", [](const fs::path& d) { return one_image(d, "9 0.5 0.5 0.2 0.2\n"); },
     false, "labels/train/a.txt:1", "class id 9 is unknown", 1},
    {"duplicate rows are a warning", [](const fs::path& d) { return one_image(d, kBox + kBox); },
     true, "labels/train/a.txt:2", "duplicate row", 2},
    {"background image counted, not flagged", [](const fs::path& d) { return one_image(d, "-"); },
     true, "", "", 2},
    {"huge label file",
     [](const fs::path& d) {
         std::string big;
         big.reserve(17u << 20);
         while (big.size() < (17u << 20))
             big += "0 0.5 0.5 0.2 0.2 \n";
         return one_image(d, big);
     },
     false, "labels/train/a.txt", "over the limit", 1},
    {"truncated JPEG",
     [](const fs::path& d) {
         const auto y = one_image(d, kBox);
         const auto jpeg = test::encoded(".jpg", 64, 64);
         write_bytes(d / "images/train/a.jpg", jpeg.substr(0, jpeg.size() * 2 / 3));
         return y;
     },
     false, "images/train/a.jpg", "truncated JPEG", 1},
    {"truncated PNG",
     [](const fs::path& d) {
         const auto y = one_image(d, kBox);
         const auto png = test::encoded(".png", 64, 64);
         write_bytes(d / "images/train/t.png", png.substr(0, png.size() - 20));
         return y;
     },
     false, "images/train/t.png", "truncated PNG", 2},
    {"data.yaml path outside its folder",
     [](const fs::path& d) {
         one_image(d, kBox);
         write_bytes(d / "data.yaml", "path: ../../..\ntrain: images/train\nnames: [a, b]\n");
         return d / "data.yaml";
     },
     false, "data.yaml:1", "path traversal", 0},
    {"data.yaml train outside the root",
     [](const fs::path& d) {
         one_image(d, kBox);
         write_bytes(d / "data.yaml", "train: ../../../etc\nnames: [a, b]\n");
         return d / "data.yaml";
     },
     false, "data.yaml:1", "path traversal", 0},
    {"list entry outside the root",
     [](const fs::path& d) {
         one_image(d, kBox);
         write_bytes(d / "list.txt", "images/train/ok.jpg\n../../../../etc/passwd\n");
         write_bytes(d / "data.yaml", "train: list.txt\nnames: [a, b]\n");
         return d / "data.yaml";
     },
     false, "list.txt:2", "path traversal", 1},
    {"list entry missing",
     [](const fs::path& d) {
         one_image(d, kBox);
         write_bytes(d / "list.txt", "images/train/ok.jpg\nimages/train/gone.jpg\n");
         write_bytes(d / "data.yaml", "train: list.txt\nnames: [a, b]\n");
         return d / "data.yaml";
     },
     false, "images/train/gone.jpg", "missing", 1},
    {"YAML not a map",
     [](const fs::path& d) {
         write_bytes(d / "data.yaml", "- train\n- val\n");
         return d / "data.yaml";
     },
     false, "data.yaml", "must be a YAML map", 0},
    {"names neither list nor map",
     [](const fs::path& d) {
         one_image(d, kBox);
         write_bytes(d / "data.yaml", "train: images/train\nnames: 3\n");
         return d / "data.yaml";
     },
     false, "data.yaml", "'names' must be a list or a map", 0},
    {"empty data.yaml",
     [](const fs::path& d) {
         write_bytes(d / "data.yaml", "");
         return d / "data.yaml";
     },
     false, "data.yaml", "empty", 0},
    {"binary data.yaml",
     [](const fs::path& d) {
         write_bytes(d / "data.yaml", std::string("\x00\x01\xff\xfe[{", 6));
         return d / "data.yaml";
     },
     false, "data.yaml", "", 0},
    {"missing split folder",
     [](const fs::path& d) {
         one_image(d, kBox);
         write_bytes(d / "data.yaml", "train: images/train\nval: images/nothing\nnames: [a, b]\n");
         return d / "data.yaml";
     },
     false, "data.yaml", "does not exist", 2},
    {"COCO not an object",
     [](const fs::path& d) {
         write_bytes(d / "annotations.json", "[1, 2]");
         return d / "annotations.json";
     },
     false, "annotations.json", "JSON object", 0},
    {"COCO truncated JSON",
     [](const fs::path& d) {
         write_bytes(d / "annotations.json", "{\"images\": [{\"id\": 1,");
         return d / "annotations.json";
     },
     false, "annotations.json", "", 0},
    {"COCO file_name traversal and unknown category",
     [](const fs::path& d) {
         write_bytes(d / "images/a.jpg", test::encoded(".jpg", 32, 32));
         const Json doc = {
             {"images",
              {{{"id", 1}, {"file_name", "../../etc/passwd"}},
               {{"id", 2}, {"file_name", "a.jpg"}, {"width", 32}, {"height", 32}}}},
             {"annotations", {{{"image_id", 2}, {"category_id", 5}, {"bbox", {1, 1, 5, 5}}}}},
             {"categories", {{{"id", 1}, {"name", "x"}}}}};
         write_bytes(d / "annotations.json", doc.dump());
         return d / "annotations.json";
     },
     false, "annotations.json: images[0]", "path traversal", 0},
    {"VOC malformed XML and filename traversal",
     [](const fs::path& d) {
         write_bytes(d / "Annotations/a.xml",
                     "<annotation>\n<filename>../../x.jpg</filename>\n</annotation>\n");
         write_bytes(d / "Annotations/b.xml", "<annotation>\n<object>\n</annotation>\n");
         return d;
     },
     false, "Annotations/b.xml:3", "does not match", 0},
};

TEST(Hostile, EveryBadDatasetGetsAClearMessage) {
    ASSERT_GE(std::size(kCases), 20u);
    for (const auto& c : kCases) {
        SCOPED_TRACE(c.name);
        test::TempDir dir;
        const fs::path path = c.make(dir.path());
        const ValidationReport report = validate_dataset(path);
        EXPECT_EQ(report.ok(), c.ok) << report.to_text();
        if (c.images != SIZE_MAX) {
            EXPECT_EQ(report.stats.images, c.images) << report.to_text();
        }
        if (*c.what || *c.where) {
            bool found = false;
            for (const auto& p : report.problems)
                found = found || (p.where.find(c.where) != std::string::npos &&
                                  p.what.find(c.what) != std::string::npos);
            EXPECT_TRUE(found) << "no problem at '" << c.where << "' saying '" << c.what
                               << "' in:\n"
                               << report.to_text();
        } else {
            EXPECT_EQ(report.errors(), 0u) << report.to_text();
        }
        // Every report renders, as text and as JSON (non-UTF-8 names included).
        EXPECT_FALSE(report.to_text().empty());
        EXPECT_NO_THROW((void)report.to_json().dump());
    }
}

TEST(Hostile, VocTraversalIsNamed) {
    test::TempDir dir;
    write_bytes(dir / "Annotations/a.xml",
                "<annotation>\n<filename>../../x.jpg</filename>\n</annotation>\n");
    const auto report = validate_dataset(dir.path());
    ASSERT_EQ(report.problems.size(), 1u) << report.to_text();
    EXPECT_EQ(report.problems[0].where, "Annotations/a.xml:2");
    EXPECT_NE(report.problems[0].what.find("path traversal"), std::string::npos);
}

}  // namespace
}  // namespace crucible::data
