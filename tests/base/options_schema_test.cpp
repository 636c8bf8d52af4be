#include "core/base/options_schema.h"

#include <gtest/gtest.h>

#include "core/base/error.h"

using namespace crucible;

namespace {
OptionSchema sample_schema() {
    OptionSchema s("detect.yolo", "YOLO detection");
    s.add({.name = "epochs",
           .type = OptionType::Integer,
           .default_value = 100,
           .min = 1,
           .max = 100000,
           .help = "epochs"});
    s.add({.name = "lr0",
           .type = OptionType::Number,
           .default_value = 0.01,
           .min = 0.0,
           .help = "initial LR"});
    s.add({.name = "optimizer",
           .type = OptionType::Choice,
           .default_value = "auto",
           .choices = {"auto", "SGD", "AdamW"}});
    s.add({.name = "cos_lr", .type = OptionType::Boolean, .default_value = false});
    s.add({.name = "data", .type = OptionType::Path, .help = "data.yaml", .required = true});
    return s;
}
std::string where_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const InputError& e) {
        return e.where();
    }
    return "<no error>";
}
}  // namespace

TEST(OptionSchema, ResolveFillsDefaults) {
    auto s = sample_schema();
    Json r = s.resolve({{"data", "d.yaml"}, {"epochs", 5}});
    EXPECT_EQ(r["epochs"], 5);
    EXPECT_EQ(r["lr0"], 0.01);
    EXPECT_EQ(r["optimizer"], "auto");
    EXPECT_EQ(r["cos_lr"], false);
}

TEST(OptionSchema, ErrorsNameTheOption) {
    auto s = sample_schema();
    EXPECT_EQ(where_of([&] { s.resolve({{"data", "d"}, {"epochs", 0}}); }), "epochs");
    EXPECT_EQ(where_of([&] { s.resolve({{"data", "d"}, {"epochs", "ten"}}); }), "epochs");
    EXPECT_EQ(where_of([&] { s.resolve({{"data", "d"}, {"optimizer", "Lion"}}); }), "optimizer");
    EXPECT_EQ(where_of([&] { s.resolve(Json::object()); }), "data");
    EXPECT_EQ(where_of([&] { s.resolve({{"data", "d"}, {"lr0", -1}}); }), "lr0");
    try {
        s.resolve({{"data", "d"}, {"epoch", 3}});
        FAIL();
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("did you mean 'epochs'"), std::string::npos);
    }
}

TEST(OptionSchema, ParsesKeyValueWords) {
    auto s = sample_schema();
    Json c = s.parse_key_values({"epochs=50", "lr0=1e-3", "cos_lr=True", "data=x/data.yaml"});
    EXPECT_EQ(c["epochs"], 50);
    EXPECT_DOUBLE_EQ(c["lr0"].get<double>(), 1e-3);
    EXPECT_EQ(c["cos_lr"], true);
    EXPECT_EQ(where_of([&] { s.parse_key_values({"epochs=5x"}); }), "epochs");
    EXPECT_EQ(where_of([&] { s.parse_key_values({"epochs"}); }), "epochs");
}

TEST(OptionSchema, JsonRoundTrip) {
    auto s = sample_schema();
    auto back = OptionSchema::from_json(s.to_json());
    EXPECT_EQ(back.to_json(), s.to_json());
    EXPECT_EQ(back.find("optimizer")->choices.size(), 3u);
}
