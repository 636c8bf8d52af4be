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
    o.predictions = {{{0, 0.5, 0.5, 0.25, 0.25}, 0.9}};
    r.images.push_back(o);
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
