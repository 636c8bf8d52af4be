#include "core/data/formats/yolo_labels.h"

#include <gtest/gtest.h>

#include <limits>

namespace crucible::data {
namespace {

TEST(YoloLabels, ParsesBoxesPolygonsBomCrlfAndScientific) {
    const std::string text =
        "\xEF\xBB\xBF"
        "0 0.5 0.5 0.2 0.4\r\n"
        "\r\n"
        "  2   1e-1 +0.25 5E-2 0.1  \r\n"
        "1 0.1 0.2 0.3 0.2 0.2 0.6\n"
        "1.0 0.5 0.5 0.1 0.1";
    const auto r = parse_yolo_labels(text, "a.txt", 3);
    ASSERT_FALSE(r.has_error()) << r.problems.front().where << " " << r.problems.front().what;
    ASSERT_EQ(r.boxes.size(), 4u);
    EXPECT_EQ(r.boxes[0], (Box{0, 0.5, 0.5, 0.2, 0.4}));
    EXPECT_EQ(r.boxes[1].cls, 2);
    EXPECT_DOUBLE_EQ(r.boxes[1].cx, 0.1);
    EXPECT_DOUBLE_EQ(r.boxes[1].cy, 0.25);
    EXPECT_DOUBLE_EQ(r.boxes[1].w, 0.05);
    // Polygon (0.1,0.2) (0.3,0.2) (0.2,0.6) -> bounding box x 0.1..0.3, y 0.2..0.6.
    EXPECT_EQ(r.boxes[2].cls, 1);
    EXPECT_NEAR(r.boxes[2].cx, 0.2, 1e-12);
    EXPECT_NEAR(r.boxes[2].cy, 0.4, 1e-12);
    EXPECT_NEAR(r.boxes[2].w, 0.2, 1e-12);
    EXPECT_NEAR(r.boxes[2].h, 0.4, 1e-12);
    EXPECT_EQ(r.boxes[3].cls, 1);
}

TEST(YoloLabels, EmptyTextIsBackground) {
    EXPECT_TRUE(parse_yolo_labels("", "a.txt", 3).boxes.empty());
    EXPECT_TRUE(parse_yolo_labels("\n\r\n  \n", "a.txt", 3).problems.empty());
}

struct BadRow {
    const char* row;
    const char* expect;  // part of the message
};

TEST(YoloLabels, RejectsBadRowsWithFileAndLine) {
    const BadRow cases[] = {
        {"0 0.5 0.5 0.2", "found 4"},
        {"0 0.5 0.5 0.2 0.2 0.1", "found 6"},
        {"0 0.1 0.1 0.2 0.2 0.3 0.3 0.4", "found 8"},
        {"0 0.5 abc 0.2 0.2", "'abc' is not a number"},
        {"0 0.5 0.5 -0.2 0.2", "negative"},
        {"0 1.5 0.5 0.2 0.2", "above 1"},
        {"0 0.5 0.5 nan 0.2", "not a finite number"},
        {"0 0.5 0.5 inf 0.2", "not a finite number"},
        {"7 0.5 0.5 0.2 0.2", "class id 7 is unknown"},
        {"-1 0.5 0.5 0.2 0.2", "not a non-negative integer"},
        {"0.5 0.5 0.5 0.2 0.2", "not a non-negative integer"},
        {"0 0.5 0.5 0 0.2", "zero width"},
        {"0 0x1p-1 0.5 0.2 0.2", "is not a number"},
        {"0 0.5\xff 0.5 0.2 0.2", "\\xff"},
    };
    for (const auto& c : cases) {
        const std::string text = "0 0.5 0.5 0.1 0.1\n" + std::string(c.row) + "\n";
        const auto r = parse_yolo_labels(text, "labels/x.txt", 3);
        ASSERT_TRUE(r.has_error()) << c.row;
        ASSERT_EQ(r.problems.size(), 1u) << c.row;
        EXPECT_EQ(r.problems[0].where, "labels/x.txt:2") << c.row;
        EXPECT_NE(r.problems[0].what.find(c.expect), std::string::npos)
            << c.row << " -> " << r.problems[0].what;
    }
}

TEST(YoloLabels, DuplicateRowsAreDroppedWithAWarning) {
    const auto r =
        parse_yolo_labels("0 0.5 0.5 0.1 0.1\n1 0.5 0.5 0.1 0.1\n0 0.5 0.5 0.1 0.1\n", "l.txt", 2);
    EXPECT_FALSE(r.has_error());
    EXPECT_EQ(r.boxes.size(), 2u);
    ASSERT_EQ(r.problems.size(), 1u);
    EXPECT_FALSE(r.problems[0].error);
    EXPECT_EQ(r.problems[0].where, "l.txt:3");
}

TEST(YoloLabels, ManyBadRowsAreCapped) {
    std::string text;
    for (int i = 0; i < 5000; ++i)
        text += "x\n";
    const auto r = parse_yolo_labels(text, "l.txt", 2);
    EXPECT_LE(r.problems.size(), 101u);
    EXPECT_TRUE(r.has_error());
}

TEST(YoloLabels, FormatsRowsThatReadBackExactly) {
    const Box b{3, 0.1 + 0.2, 1.0 / 3, 2.0 / 7, 0.5};
    const auto r = parse_yolo_labels(format_yolo_row(b), "l.txt", 4);
    ASSERT_EQ(r.boxes.size(), 1u);
    EXPECT_EQ(r.boxes[0], b);
    double v = 0;
    EXPECT_TRUE(parse_label_number("+1e-3", v));
    EXPECT_DOUBLE_EQ(v, 0.001);
    EXPECT_FALSE(parse_label_number("", v));
    EXPECT_FALSE(parse_label_number("+", v));
    EXPECT_FALSE(parse_label_number("1.0.0", v));
}

}  // namespace
}  // namespace crucible::data
