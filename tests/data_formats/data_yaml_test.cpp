#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/dataset_io.h"
#include "core/data/formats/formats.h"
#include "tests/data_formats/test_util.h"

namespace crucible::data {
namespace {

namespace fs = std::filesystem;

TEST(DataYaml, ListNamesAndFolders) {
    test::TempDir dir;
    const auto y = parse_data_yaml(
        "path: ds\ntrain: images/train\nval: [images/val, extra/val.txt]\nnames: [cat, dog]\n",
        dir / "data.yaml");
    EXPECT_EQ(y.root, dir.path() / "ds");
    ASSERT_EQ(y.splits.at("train").size(), 1u);
    EXPECT_EQ(y.splits.at("train")[0], dir.path() / "ds/images/train");
    ASSERT_EQ(y.splits.at("val").size(), 2u);
    EXPECT_EQ(y.splits.at("val")[1], dir.path() / "ds/extra/val.txt");
    EXPECT_EQ(y.names, (std::vector<std::string>{"cat", "dog"}));
    EXPECT_FALSE(y.splits.count("test"));
}

TEST(DataYaml, MapNamesWithGapsAndNc) {
    test::TempDir dir;
    const auto y = parse_data_yaml("train: a\nval: a\ntest:\nnames:\n  0: person\n  2: \"猫\"\n",
                                   dir / "d.yaml");
    EXPECT_EQ(y.root, dir.path());
    EXPECT_EQ(y.names, (std::vector<std::string>{"person", "class1", "猫"}));
    EXPECT_EQ(y.problems.size(), 1u);
    const auto n = parse_data_yaml("train: a\nnc: 3\n", dir / "d.yaml");
    EXPECT_EQ(n.names.size(), 3u);
    EXPECT_THROW(parse_data_yaml("train: a\nnc: 3\nnames: [a, b]\n", dir / "d.yaml"), InputError);
}

TEST(DataYaml, AbsolutePathIsAllowed) {
    test::TempDir dir;
    const auto y = parse_data_yaml(
        "path: " + path_to_utf8(dir.path() / "elsewhere") + "\ntrain: images\nnames: [a]\n",
        dir / "sub/data.yaml");
    EXPECT_EQ(y.root, dir.path() / "elsewhere");
}

struct BadYaml {
    const char* text;
    const char* expect;
};

TEST(DataYaml, RejectsBadFilesWithClearMessages) {
    test::TempDir dir;
    const BadYaml cases[] = {
        {"", "empty"},
        {"- a\n- b\n", "must be a YAML map"},
        {"just text", "must be a YAML map"},
        {"train: a\nnames: cat\n", "'names' must be a list or a map"},
        {"train: a\nnames: {x: cat}\n", "is not a class index"},
        {"train: a\nnames: [[a, b]]\n", "must be a text value"},
        {"train: a\n", "no 'names'"},
        {"names: [a]\n", "no 'train' or 'val'"},
        {"path: ../..\ntrain: a\nnames: [a]\n", "outside the folder of data.yaml"},
        {"train: ../../etc\nnames: [a]\n", "outside the dataset root"},
        {"train: [ok, /etc]\nnames: [a]\n", "outside the dataset root"},
        {"train: {a: 1}\nnames: [a]\n", "must be a text value"},
        {"train: a\nnames: [a\n", "not valid YAML"},
        {"train: a\nnc: many\nnames: [a]\n", "'nc' must be an integer"},
        {"train: \"\xff\"\nnames: [a]\n", "not valid UTF-8"},
    };
    for (const auto& c : cases) {
        try {
            parse_data_yaml(c.text, dir / "data.yaml");
            ADD_FAILURE() << "accepted: " << c.text;
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos)
                << c.text << " -> " << e.what();
            EXPECT_NE(e.where().find("data.yaml"), std::string::npos) << e.where();
        }
    }
    // Allowed explicitly, the same file loads.
    EXPECT_NO_THROW(parse_data_yaml("train: ../../etc\nnames: [a]\n", dir / "data.yaml", true));
}

TEST(DataYaml, ErrorsNameTheLine) {
    test::TempDir dir;
    try {
        parse_data_yaml("names: [a]\ntrain: x\nval: ../../out\n", dir / "data.yaml");
        FAIL();
    } catch (const InputError& e) {
        EXPECT_NE(e.where().find("data.yaml:3"), std::string::npos) << e.where();
    }
}

TEST(DataYaml, LabelPathRule) {
    EXPECT_EQ(yolo_label_path("/d/images/train/a.jpg"), fs::path("/d/labels/train/a.txt"));
    EXPECT_EQ(yolo_label_path("/images/d/images/b.x.png"), fs::path("/images/d/labels/b.x.txt"));
    EXPECT_EQ(yolo_label_path("/d/pics/c.jpg"), fs::path("/d/pics/c.txt"));
}

// The class names written back (after classes were renamed or merged in the studio): the other
// keys stay, nc follows, the same names write nothing, and a file that is not a data.yaml is
// refused with its name.
TEST(DataYaml, ClassNamesAreWrittenBackKeepingTheRest) {
    test::TempDir dir;
    const auto yaml = dir / "data.yaml";
    write_file_atomically(yaml,
                          "path: .\ntrain: images/train\nval: images/val\nnc: 3\n"
                          "names: [cat, dog, bird]\n");
    EXPECT_FALSE(write_yolo_class_names(yaml, {"cat", "dog", "bird"}));
    EXPECT_TRUE(write_yolo_class_names(yaml, {"猫", "dog"}));
    const auto y = parse_data_yaml(read_file_bytes(yaml), yaml);
    EXPECT_EQ(y.names, (std::vector<std::string>{"猫", "dog"}));
    EXPECT_EQ(y.splits.at("train")[0], dir.path() / "images/train");
    EXPECT_NE(read_file_bytes(yaml).find("nc: 2"), std::string::npos) << read_file_bytes(yaml);
    EXPECT_EQ(find_yolo_yaml(dir.path()), yaml);

    const auto not_yaml = dir / "other.yaml";
    write_file_atomically(not_yaml, "- just\n- a list\n");
    try {
        write_yolo_class_names(not_yaml, {"a"});
        ADD_FAILURE() << "a YAML list was taken for a data.yaml";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("other.yaml"), std::string::npos) << e.what();
    }
    EXPECT_EQ(read_file_bytes(not_yaml), "- just\n- a list\n");  // left as it was
    EXPECT_TRUE(find_yolo_yaml(dir.path() / "nowhere").empty());
}

}  // namespace
}  // namespace crucible::data
