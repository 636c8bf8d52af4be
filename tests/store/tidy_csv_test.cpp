// Tidy CSV of runs' metrics and per-class evaluations: one row per run, metric and point, the
// points a rollback superseded left out, text quoted for spreadsheets (and kept from running as
// a formula), numbers that read back exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "core/base/error.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "core/store/tidy_csv.h"
#include "tests/store/store_test_util.h"

namespace crucible::store {
namespace {

Event numbered(Event e, std::int64_t seq) {
    e.seq = seq;
    e.t = 1764739200.0 + static_cast<double>(seq);
    return e;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        out.push_back(line);
    return out;
}

TEST(TidyCsv, MetricsOneRowPerRunMetricAndPointAfterRollbacks) {
    test::TempDir dir;
    auto p = Project::create(dir / "p.crucible");
    const auto a = create_run(*p, {.name = "=HYPERLINK(\"x\"), line 3", .task = "detect.yolo"});
    const auto b = create_run(*p, {.name = "plain", .task = "llm.lora"});
    append_events(*p, a,
                  {numbered(make_metric(1, 10, {{"train/box_loss", 1.5}}), 0),
                   numbered(make_metric(1, 20, {{"train/box_loss", 1.25}}), 1),
                   numbered(make_rollback(10), 2),
                   numbered(make_metric(1, 20, {{"train/box_loss", 0.1 + 0.2}}), 3),
                   numbered(make_eval(1, 20, {{"metrics/mAP50(B)", std::nan("")}}), 4)});
    append_events(*p, b, {numbered(make_metric(0, 5, {{"train/loss", 2.0}}), 0)});

    const auto rows = lines_of(tidy_metrics_csv(*p));
    ASSERT_EQ(rows.size(), 5u) << tidy_metrics_csv(*p);
    EXPECT_EQ(rows[0], "run_id,run,task,metric,step,epoch,time,value");
    const std::string a_head =
        std::to_string(a) + ",\"'=HYPERLINK(\"\"x\"\"), line 3\",detect.yolo,";
    EXPECT_EQ(rows[1], a_head + "metrics/mAP50(B),20,1,1764739204.000,") << "NaN: an empty cell";
    EXPECT_EQ(rows[2], a_head + "train/box_loss,10,1,1764739200.000,1.5");
    EXPECT_EQ(rows[3], a_head + "train/box_loss,20,1,1764739203.000,0.30000000000000004")
        << "the point the rollback superseded is gone; the value reads back exactly";
    EXPECT_EQ(rows[4], std::to_string(b) + ",plain,llm.lora,train/loss,5,0,1764739200.000,2");
    EXPECT_EQ(lines_of(tidy_metrics_csv(*p, {b})).size(), 2u);
    EXPECT_THROW(tidy_metrics_csv(*p, {999}), InputError);
}

TEST(TidyCsv, PerClassRowsOfEveryEvaluation) {
    test::TempDir dir;
    auto p = Project::create(dir / "p.crucible");
    const auto run = create_run(*p, {.name = "r", .task = "detect.yolo"});
    const Json per_class = Json::array(
        {{{"class", 0}, {"name", "划痕"}, {"p", 0.5}, {"map50", 0.25}},
         {{"class", 1}, {"name", "dent, deep"}, {"r", 1}},
         {{"class", "wrong type"}, {"name", 7}, {"p", 0.125}},  // a damaged row: cells left empty
         "not a row"});
    append_events(*p, run,
                  {numbered(make_eval(1, 10, {{"metrics/mAP50(B)", 0.3}}, per_class), 0),
                   numbered(make_eval(2, 20, {{"metrics/mAP50(B)", 0.4}}), 1)});
    EXPECT_EQ(lines_of(tidy_per_class_csv(*p)),
              (std::vector<std::string>{"run_id,run,epoch,step,class,name,metric,value",
                                        "1,r,1,10,0,划痕,map50,0.25", "1,r,1,10,0,划痕,p,0.5",
                                        "1,r,1,10,1,\"dent, deep\",r,1", "1,r,1,10,,,p,0.125"}));
}

TEST(TidyCsv, TextFieldsAreQuotedAndDefused) {
    EXPECT_EQ(csv_text_field("plain"), "plain");
    EXPECT_EQ(csv_text_field("a,b"), "\"a,b\"");
    EXPECT_EQ(csv_text_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    EXPECT_EQ(csv_text_field("two\nlines"), "\"two\nlines\"");
    EXPECT_EQ(csv_text_field("=1+1"), "'=1+1");
    EXPECT_EQ(csv_text_field("-3"), "'-3");
    EXPECT_EQ(csv_text_field("@sum"), "'@sum");
    EXPECT_EQ(csv_text_field(""), "");
    EXPECT_EQ(csv_number(0.25), "0.25");
    EXPECT_EQ(csv_number(-2), "-2");
    EXPECT_EQ(csv_number(std::nan("")), "");
    EXPECT_EQ(csv_number(1e300), "1e+300");
}

}  // namespace
}  // namespace crucible::store
