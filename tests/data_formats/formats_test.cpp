#include <gtest/gtest.h>

#include <algorithm>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/data/dataset_io.h"
#include "core/data/formats/xml_reader.h"
#include "tests/data_formats/test_util.h"

namespace crucible::data {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::write_bytes;

std::string stem_of(const ImageRecord& r) {
    return path_to_utf8(r.path.stem());
}

// Images sorted by file stem (writers may move them; stems survive).
std::vector<ImageRecord> by_stem(std::vector<ImageRecord> images) {
    std::sort(images.begin(), images.end(),
              [](const ImageRecord& a, const ImageRecord& b) { return stem_of(a) < stem_of(b); });
    return images;
}

void expect_same_boxes(const DetectionDataset& a, const DetectionDataset& b,
                       const std::string& step) {
    ASSERT_EQ(a.class_names, b.class_names) << step;
    const auto ia = by_stem(a.images), ib = by_stem(b.images);
    ASSERT_EQ(ia.size(), ib.size()) << step;
    for (std::size_t i = 0; i < ia.size(); ++i) {
        EXPECT_EQ(stem_of(ia[i]), stem_of(ib[i])) << step;
        EXPECT_EQ(ia[i].split, ib[i].split) << step << " " << stem_of(ia[i]);
        ASSERT_EQ(ia[i].boxes.size(), ib[i].boxes.size()) << step << " " << stem_of(ia[i]);
        for (std::size_t k = 0; k < ia[i].boxes.size(); ++k) {
            const Box &x = ia[i].boxes[k], &y = ib[i].boxes[k];
            EXPECT_EQ(x.cls, y.cls) << step;
            EXPECT_NEAR(x.cx, y.cx, 1e-6) << step;
            EXPECT_NEAR(x.cy, y.cy, 1e-6) << step;
            EXPECT_NEAR(x.w, y.w, 1e-6) << step;
            EXPECT_NEAR(x.h, y.h, 1e-6) << step;
        }
    }
}

TEST(Formats, RoundTripYoloCocoVocYolo) {
    TempDir dir;
    const auto yaml = test::write_yolo_dataset(
        dir / "src",
        {{"train", "a.jpg", 64, 48,
          "0 0.5 0.5 0.25 0.5\n2 0.123456789 0.3333333333 0.1111111 0.2222222\n"},
         {"train", "猫.png", 50, 70, "1 0.2 0.8 0.1 0.1\n"},
         {"val", "c.jpg", 33, 21, "2 0.7 0.4 0.3 0.3\n0 0.1 0.1 0.05 0.05\n"},
         {"val", "bg.jpg", 40, 40, ""}},
        "names:\n  0: cat\n  1: \"dog: big\"\n  2: 鸟\n");
    const auto src = load_detection_dataset(yaml);
    ASSERT_TRUE(src.problems.empty())
        << src.problems.front().where << ": " << src.problems.front().what;
    ASSERT_EQ(src.dataset.images.size(), 4u);
    EXPECT_EQ(src.dataset.class_names, (std::vector<std::string>{"cat", "dog: big", "鸟"}));

    const auto coco_file = save_detection_dataset(src.dataset, dir / "coco", DatasetFormat::Coco);
    EXPECT_EQ(detect_dataset_format(dir / "coco"), DatasetFormat::Coco);
    const auto coco = load_detection_dataset(coco_file);
    ASSERT_TRUE(coco.problems.empty()) << coco.problems.front().what;
    expect_same_boxes(src.dataset, coco.dataset, "yolo->coco");

    save_detection_dataset(coco.dataset, dir / "voc", DatasetFormat::Voc);
    EXPECT_EQ(detect_dataset_format(dir / "voc"), DatasetFormat::Voc);
    const auto voc = load_detection_dataset(dir / "voc");
    ASSERT_TRUE(voc.problems.empty())
        << voc.problems.front().where << ": " << voc.problems.front().what;
    expect_same_boxes(src.dataset, voc.dataset, "coco->voc");

    const auto back_yaml = save_detection_dataset(voc.dataset, dir / "yolo", DatasetFormat::Yolo);
    const auto back = load_detection_dataset(back_yaml, DatasetFormat::Yolo);
    ASSERT_TRUE(back.problems.empty()) << back.problems.front().what;
    expect_same_boxes(src.dataset, back.dataset, "voc->yolo");
}

// Edited boxes go back into the VOC files they came from: only changed images' files are
// written, their other elements (and comments) stay, classes.txt gets the names, and the dataset
// read back is the edited one.
TEST(Formats, VocEditsAreWrittenBackIntoTheirFiles) {
    TempDir dir;
    const auto yaml = test::write_yolo_dataset(
        dir / "src", {{"train", "a.jpg", 64, 48, "0 0.5 0.5 0.25 0.5\n2 0.25 0.25 0.125 0.25\n"},
                      {"val", "b.jpg", 40, 40, "1 0.5 0.5 0.5 0.5\n"}});
    save_detection_dataset(load_detection_dataset(yaml).dataset, dir / "voc", DatasetFormat::Voc);
    const fs::path a_xml = dir / "voc" / "Annotations" / "a.xml";
    std::string text = test::read_text(a_xml);
    text.insert(text.find("<size>"),
                "<!-- checked by Li -->\n  <source><database>mine</database></source>\n  ");
    write_bytes(a_xml, text);
    const fs::path b_xml = dir / "voc" / "Annotations" / "b.xml";
    const std::string b_before = test::read_text(b_xml);

    auto edited = load_detection_dataset(dir / "voc").dataset;
    EXPECT_EQ(write_voc_annotation_files(edited, dir / "voc"), 0u);  // nothing changed yet
    auto& a = *std::find_if(edited.images.begin(), edited.images.end(),
                            [](const ImageRecord& r) { return stem_of(r) == "a"; });
    a.boxes.erase(a.boxes.begin());
    a.boxes[0].cx = 0.75;
    a.boxes.push_back({1, 0.5, 0.75, 0.25, 0.125, true});
    edited.class_names[1] = "hound";                                 // renamed in the studio
    EXPECT_EQ(write_voc_annotation_files(edited, dir / "voc"), 3u);  // a.xml, b.xml, classes.txt

    const std::string a_after = test::read_text(a_xml);
    EXPECT_NE(a_after.find("<database>mine</database>"), std::string::npos) << a_after;
    EXPECT_NE(a_after.find("checked by Li"), std::string::npos) << a_after;
    EXPECT_NE(test::read_text(b_xml), b_before);  // its box's class has the new name
    const auto back = load_detection_dataset(dir / "voc");
    ASSERT_TRUE(back.problems.empty()) << back.problems.front().what;
    expect_same_boxes(edited, back.dataset, "edited->voc");
    EXPECT_EQ(write_voc_annotation_files(edited, dir / "voc"), 0u);  // written once

    // An image that has no annotation file there: named, nothing half-written.
    auto stranger = edited;
    stranger.images[0].path = dir / "elsewhere.jpg";
    stranger.images[0].boxes.clear();
    try {
        write_voc_annotation_files(stranger, dir / "voc");
        ADD_FAILURE() << "an image without an annotation file was accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("elsewhere.jpg"), std::string::npos) << e.what();
    }
}

TEST(Formats, YoloListFilesAndListsOfSources) {
    TempDir dir;
    test::write_yolo_dataset(dir.path(), {{"train", "a.jpg", 32, 32, "0 0.5 0.5 0.2 0.2\n"},
                                          {"train", "b.jpg", 32, 32, "-"},
                                          {"val", "c.jpg", 32, 32, "1 0.5 0.5 0.2 0.2\n"}});
    write_bytes(dir / "train.txt", "./images/train/a.jpg\r\nimages/train/b.jpg\n\n");
    write_bytes(dir / "d.yaml", "train: [train.txt]\nval: [images/val]\nnames: {0: a, 1: b}\n");
    const auto r = load_detection_dataset(dir / "d.yaml");
    ASSERT_TRUE(r.problems.empty()) << r.problems.front().where << ": " << r.problems.front().what;
    ASSERT_EQ(r.dataset.images.size(), 3u);
    EXPECT_EQ(r.dataset.images[0].split, "train");
    EXPECT_EQ(r.dataset.images[0].boxes.size(), 1u);
    EXPECT_TRUE(r.dataset.images[1].boxes.empty());  // no label file: background
    EXPECT_EQ(r.dataset.images[2].split, "val");
    EXPECT_EQ(r.dataset.images[2].width, 0);  // sizes only on request
    LoadOptions sized;
    sized.read_image_sizes = true;
    EXPECT_EQ(
        load_detection_dataset(dir / "d.yaml", DatasetFormat::Auto, sized).dataset.images[2].width,
        32);
}

#ifndef _WIN32
TEST(Formats, SymlinkedImageFolderIsNotTraversal) {
    TempDir dir;
    test::write_yolo_dataset(dir / "elsewhere",
                             {{"train", "a.jpg", 32, 32, "0 0.5 0.5 0.2 0.2\n"}});
    fs::create_directories(dir / "ds");
    fs::create_directory_symlink(dir / "elsewhere/images", dir / "ds/images");
    fs::create_directory_symlink(dir / "elsewhere/labels", dir / "ds/labels");
    write_bytes(dir / "ds/data.yaml", "train: images/train\nnames: [a]\n");
    const auto r = load_detection_dataset(dir / "ds/data.yaml");
    ASSERT_TRUE(r.problems.empty()) << r.problems.front().where << ": " << r.problems.front().what;
    ASSERT_EQ(r.dataset.images.size(), 1u);
    EXPECT_EQ(r.dataset.images[0].boxes.size(), 1u);
}
#endif

TEST(Formats, CocoNonContiguousCategoriesAndCrowd) {
    TempDir dir;
    write_bytes(dir / "images/x.jpg", test::encoded(".jpg", 100, 50));
    write_bytes(dir / "images/y.jpg", test::encoded(".jpg", 100, 50));
    const Json doc = {
        {"images",
         {{{"id", 7}, {"file_name", "x.jpg"}, {"width", 100}, {"height", 50}},
          {{"id", 9}, {"file_name", "y.jpg"}}}},
        {"annotations",
         {{{"id", 1}, {"image_id", 7}, {"category_id", 90}, {"bbox", {10, 5, 20, 10}}},
          {{"id", 2}, {"image_id", 7}, {"category_id", 3}, {"bbox", {0, 0, 100, 50}}},
          {{"id", 3},
           {"image_id", 9},
           {"category_id", 3},
           {"bbox", {0, 0, 5, 5}},
           {"iscrowd", 1}}}},
        {"categories", {{{"id", 90}, {"name", "toothbrush"}}, {{"id", 3}, {"name", "car"}}}}};
    write_bytes(dir / "instances.json", doc.dump());
    const auto r = load_detection_dataset(dir / "instances.json");
    EXPECT_EQ(r.dataset.class_names, (std::vector<std::string>{"car", "toothbrush"}));
    ASSERT_EQ(r.dataset.images.size(), 2u);
    const auto& x = r.dataset.images[0];
    ASSERT_EQ(x.boxes.size(), 2u);
    EXPECT_EQ(x.boxes[0].cls, 1);
    EXPECT_DOUBLE_EQ(x.boxes[0].cx, 0.2);
    EXPECT_DOUBLE_EQ(x.boxes[0].cy, 0.2);
    EXPECT_DOUBLE_EQ(x.boxes[0].w, 0.2);
    EXPECT_DOUBLE_EQ(x.boxes[0].h, 0.2);
    EXPECT_EQ(x.boxes[1], (Box{0, 0.5, 0.5, 1, 1}));
    EXPECT_EQ(r.dataset.images[1].width, 100);  // from the header
    EXPECT_TRUE(r.dataset.images[1].boxes.empty());
    ASSERT_EQ(r.problems.size(), 1u);  // the crowd note
    EXPECT_FALSE(r.problems[0].error);
}

TEST(Formats, VocOneBasedPixelsAndDifficult) {
    TempDir dir;
    write_bytes(dir / "JPEGImages/p.jpg", test::encoded(".jpg", 200, 100));
    write_bytes(
        dir / "Annotations/p.xml",
        "<?xml version=\"1.0\"?>\n<!-- labelImg -->\n<annotation>\n <filename>p.jpg</filename>\n"
        " <size><width>200</width><height>100</height><depth>3</depth></size>\n"
        " <object><name>a &amp; b</name><difficult>1</difficult>\n"
        "  <bndbox><xmin>1</xmin><ymin>1</ymin><xmax>101</xmax><ymax>51</ymax></bndbox></object>\n"
        " <object><name>z</name><bndbox><xmin>51</xmin><ymin>26</ymin><xmax>201</xmax><ymax>101</"
        "ymax>"
        "</bndbox></object>\n</annotation>\n");
    const auto r = load_detection_dataset(dir.path());
    ASSERT_TRUE(r.problems.empty()) << r.problems.front().where << ": " << r.problems.front().what;
    EXPECT_EQ(r.dataset.class_names, (std::vector<std::string>{"a & b", "z"}));
    ASSERT_EQ(r.dataset.images.size(), 1u);
    const auto& boxes = r.dataset.images[0].boxes;
    ASSERT_EQ(boxes.size(), 2u);
    EXPECT_EQ(boxes[0], (Box{0, 0.25, 0.25, 0.5, 0.5, true}));
    EXPECT_EQ(boxes[1], (Box{1, 0.625, 0.625, 0.75, 0.75, false}));
    // difficult survives VOC -> COCO -> VOC.
    save_detection_dataset(r.dataset, dir / "c", DatasetFormat::Coco);
    const auto c = load_detection_dataset(dir / "c");
    save_detection_dataset(c.dataset, dir / "v", DatasetFormat::Voc);
    const auto v = load_detection_dataset(dir / "v");
    ASSERT_EQ(v.dataset.images.size(), 1u);
    EXPECT_TRUE(v.dataset.images[0].boxes[0].difficult);
    EXPECT_FALSE(v.dataset.images[0].boxes[1].difficult);
}

TEST(Formats, FormatNamesAndDetection) {
    EXPECT_EQ(parse_dataset_format("YOLO"), DatasetFormat::Yolo);
    EXPECT_EQ(parse_dataset_format("coco"), DatasetFormat::Coco);
    EXPECT_EQ(parse_dataset_format("voc"), DatasetFormat::Voc);
    EXPECT_THROW(parse_dataset_format("csv"), InputError);
    EXPECT_STREQ(dataset_format_name(DatasetFormat::Coco), "coco");
    TempDir dir;
    EXPECT_THROW(detect_dataset_format(dir.path()), InputError);
    EXPECT_THROW(detect_dataset_format(dir / "missing"), InputError);
}

TEST(XmlReader, ParsesAndRefusesHostileXml) {
    const auto root = parse_xml(
        "\xEF\xBB\xBF<?xml version='1.0'?><!DOCTYPE a [<!ENTITY x 'y'>]><a k=\"v&lt;\"><b>1 "
        "&#x4e2d;&#65;</b>"
        "<b/><![CDATA[<raw>]]><!-- c --></a>",
        "t.xml");
    EXPECT_EQ(root.name, "a");
    ASSERT_EQ(root.attributes.size(), 1u);
    EXPECT_EQ(root.attributes[0].second, "v<");
    EXPECT_EQ(root.child_text("b"), "1 中A");
    EXPECT_EQ(root.children_named("b").size(), 2u);
    EXPECT_EQ(root.text, "<raw>");
    // No entity is expanded but the predefined ones and character references: not one the
    // DOCTYPE defines (no entity bombs), nor an unknown one (it stays as written).
    EXPECT_EQ(parse_xml("<!DOCTYPE a [<!ENTITY x 'y'>]><a>&x;</a>", "t.xml").text, "&x;");
    EXPECT_EQ(parse_xml("<a>&unknown;</a>", "t.xml").text, "&unknown;");
    EXPECT_EQ(parse_xml("<a>\n  <b>中文</b>\n</a>", "t.xml").child("b")->line, 2);
    const std::pair<std::string, std::string> bad[] = {
        {"", "no root element"},
        {"<a>", "end of file inside <a>"},
        {"<a><b><c>", "end of file inside <c>"},
        {"<a></b>", "does not match"},
        {"<a>&#x110000;</a>", "out of range"},
        {"<a>\xff\xfe</a>", "not valid UTF-8"},
        {"<a k=\"\xc3\"/>", "not valid UTF-8"},
        {"<a \xff\xff=\"v\"/>", "not valid UTF-8"},  // found by fuzz_voc_xml
        {"<a/><b/>", "more than one root"},
        {"text", "outside the root"},
        {"<a b=c/>", "quoted"},
        {"<a><!-- x</a>", "unterminated comment"},
        {"<a><![CDATA[x</a>", "CDATA"},
        {std::string(100000, '<'), "expected a name"},
        {"<a>\n\n<b>\n</a>", "t.xml:4"},
    };
    for (const auto& [text, expect] : bad) {
        try {
            parse_xml(text, "t.xml");
            ADD_FAILURE() << "accepted: " << text.substr(0, 40);
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find(expect), std::string::npos)
                << text.substr(0, 40) << " -> " << e.what();
        }
    }
    std::string deep, closed;
    for (int i = 0; i < 100000; ++i)
        deep += "<a>";
    EXPECT_THROW(parse_xml(deep, "t.xml"), InputError);
    // Well formed but nested past the limit: refused, without recursion.
    for (int i = 0; i < 100000; ++i)
        closed += "<a>";
    for (int i = 0; i < 100000; ++i)
        closed += "</a>";
    try {
        parse_xml(closed, "t.xml");
        ADD_FAILURE() << "accepted 100000 nested elements";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("nested deeper than 64"), std::string::npos)
            << e.what();
    }
    EXPECT_EQ(xml_escape("<a & 'b'>"), "&lt;a &amp; &apos;b&apos;&gt;");
}

}  // namespace
}  // namespace crucible::data
