// The per-image validation report (core/data/per_image_report.h): written and read back the same;
// a table of hostile inputs is refused with the field at fault named, never a crash.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/base/json.h"
#include "core/data/per_image_report.h"

namespace crucible::data {
namespace {

PerImageReport sample() {
    PerImageReport r;
    r.names = {"划痕", "dent"};
    r.conf = 0.25;
    r.iou = 0.45;
    ImageOutcome o;
    o.path = "/data/线 3/img 1.jpg";
    o.split = "val";
    o.tags = {{"station", "3"}};
    o.true_positives = 1;
    o.false_positives = 2;
    o.misses = 1;
    o.mean_iou = 0.75;
    o.cells = {{0, 0}, {1, 2}, {2, 1}};
    o.truth_classes = {0, 1};
    o.predictions = {{{0, 0.5, 0.5, 0.25, 0.25}, 0.9, true}, {{1, 0.2, 0.3, 0.1, 0.1}, 0.4, false}};
    r.images.push_back(o);
    r.by_tag["station"]["3"] = {1, 2, 0.5, 0.5, 0.4, 0.25};
    r.by_tag["线"]["二"] = {1, 2, 1, 0, 0, 0};
    return r;
}

TEST(PerImageReport, WritesAndReadsBackTheSame) {
    const auto json = per_image_report_json(sample());
    const auto back = parse_per_image_report(parse_json(json.dump(), "report"), "report");
    EXPECT_EQ(per_image_report_json(back), json);
    ASSERT_EQ(back.images.size(), 1u);
    EXPECT_TRUE(back.images[0].counts_in(1, 2));
    EXPECT_FALSE(back.images[0].counts_in(2, 2));
    EXPECT_TRUE(back.images[0].involves_class(1));
    EXPECT_EQ(back.background(), 2);
    EXPECT_EQ(back.version, kPerImageReportVersion);
    EXPECT_TRUE(back.images[0].predictions[0].true_at_50);
    EXPECT_FALSE(back.images[0].predictions[1].true_at_50);
    EXPECT_EQ(back.images[0].truth_classes, (std::vector<int>{0, 1}));
    EXPECT_DOUBLE_EQ(back.by_tag.at("station").at("3").map50, 0.4);
    EXPECT_EQ(back.by_tag.at("线").at("二").instances, 2);
}

// A report of version 1 (six numbers a prediction, no truth classes, no by_tag) still reads, so
// the studio can tell it is old and score the run again.
TEST(PerImageReport, VersionOneStillReadsAndSaysSo) {
    Json old = per_image_report_json(sample());
    old.erase("version");
    old.erase("by_tag");
    for (auto& im : old["images"]) {
        im.erase("truth_classes");
        for (auto& p : im["predictions"])
            p.erase(6);
    }
    const auto back = parse_per_image_report(old, "old");
    EXPECT_EQ(back.version, 1);
    EXPECT_TRUE(back.images[0].truth_classes.empty());
    EXPECT_FALSE(back.images[0].predictions[0].true_at_50);
    EXPECT_DOUBLE_EQ(back.images[0].predictions[0].conf, 0.9);
}

TEST(PerImageReport, HostileInputIsRefusedNamingTheField) {
    const Json good = per_image_report_json(sample());
    struct Case {
        const char* what;
        std::function<void(Json&)> damage;
        const char* names;  // expected in the message
    };
    const std::vector<Case> cases = {
        {"not an object", [](Json& j) { j = Json::array(); }, "report"},
        {"names missing", [](Json& j) { j.erase("names"); }, "names"},
        {"names of numbers",
         [](Json& j) {
             j["names"] = {1, 2};
         },
         "names"},
        {"conf a string", [](Json& j) { j["conf"] = "high"; }, "conf"},
        {"images an object", [](Json& j) { j["images"] = Json::object(); }, "images"},
        {"image a string", [](Json& j) { j["images"][0] = "x"; }, "images[0]"},
        {"negative tp", [](Json& j) { j["images"][0]["tp"] = -1; }, "images[0].tp"},
        {"huge fp", [](Json& j) { j["images"][0]["fp"] = 1e12; }, "images[0].fp"},
        {"tag of a number", [](Json& j) { j["images"][0]["tags"]["station"] = 3; }, "station"},
        {"cell of three",
         [](Json& j) {
             j["images"][0]["cells"][0] = {1, 2, 3};
         },
         "cells[0]"},
        {"cell past the classes",
         [](Json& j) {
             j["images"][0]["cells"][0] = {7, 0};
         },
         "cells[0]"},
        {"prediction of five",
         [](Json& j) {
             j["images"][0]["predictions"][0] = {0, 1, 1, 1, 1};
         },
         "predictions[0]"},
        {"prediction with text",
         [](Json& j) { j["images"][0]["predictions"][0] = {0, "a", 1, 1, 1, 1}; },
         "predictions[0]"},
        {"path missing", [](Json& j) { j["images"][0].erase("path"); }, "path"},
        {"version from the future", [](Json& j) { j["version"] = 99; }, "version"},
        {"version a string", [](Json& j) { j["version"] = "2"; }, "version"},
        {"prediction of six in version 2",
         [](Json& j) { j["images"][0]["predictions"][0].erase(6); }, "predictions[0]"},
        {"tp50 of two", [](Json& j) { j["images"][0]["predictions"][0][6] = 2; }, "tp50"},
        {"truth classes missing", [](Json& j) { j["images"][0].erase("truth_classes"); },
         "truth_classes"},
        {"truth class past the classes",
         [](Json& j) {
             j["images"][0]["truth_classes"] = {0, 2};
         },
         "truth_classes"},
        {"truth class negative", [](Json& j) { j["images"][0]["truth_classes"] = {-1}; },
         "truth_classes"},
        {"by_tag missing", [](Json& j) { j.erase("by_tag"); }, "by_tag"},
        {"by_tag an array", [](Json& j) { j["by_tag"] = Json::array(); }, "by_tag"},
        {"tag values a number", [](Json& j) { j["by_tag"]["station"] = 3; }, "by_tag.station"},
        {"tag metrics a string", [](Json& j) { j["by_tag"]["station"]["3"] = "good"; },
         "by_tag.station.3"},
        {"tag map50 missing", [](Json& j) { j["by_tag"]["station"]["3"].erase("map50"); }, "map50"},
        {"tag images negative", [](Json& j) { j["by_tag"]["station"]["3"]["images"] = -4; },
         "images"},
    };
    for (const auto& c : cases) {
        Json bad = good;
        c.damage(bad);
        try {
            parse_per_image_report(bad, "report");
            ADD_FAILURE() << c.what << ": accepted";
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find(c.names), std::string::npos)
                << c.what << ": " << e.what();
        }
    }
}

}  // namespace
}  // namespace crucible::data
