// A schema's options on the command line (app/cli/schema_flags.h): --key value flags and
// key=value words end as the same words for the schema, Booleans may stand alone, bare words fill
// the positionals in order, and what fits nowhere is refused by name.
#include "app/cli/schema_flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/cli/cli_parser.h"
#include "core/base/error.h"

namespace crucible::cli {
namespace {

OptionSchema schema() {
    OptionSchema s("test", "Test");
    s.add(text_option("src", "", "source", "general", OptionType::Path));
    s.add(text_option("dst", "", "destination", "general", OptionType::Path));
    s.add(integer_option("imgsz", 640, 32, 4096, "size", "general"));
    s.add(boolean_option("json", false, "JSON output", "general"));
    return s;
}

// The resolved options of `words`, as a task command reads them.
Json read(const std::vector<std::string>& words, std::vector<std::string> positionals = {}) {
    const OptionSchema s = schema();
    CLI::App app{"test", "crucible test"};
    SchemaFlags flags(app, s);
    std::vector<std::string> extras;
    parse_words(app, words, &extras);
    std::vector<std::string> key_values = flags.key_values();
    for (auto& w : schema_words(s, extras, positionals))
        key_values.push_back(w);
    return s.resolve(s.parse_key_values(key_values));
}

TEST(SchemaFlags, FlagsAndKeyValuesGiveTheSameOptions) {
    const Json a = read({"src=a.jpg", "imgsz=320", "json=true"});
    const Json b = read({"--src", "a.jpg", "--imgsz", "320", "--json"});
    const Json c = read({"--src=a.jpg", "imgsz=320", "--json", "true"});
    EXPECT_EQ(a, b);
    EXPECT_EQ(a, c);
    EXPECT_EQ(a["imgsz"], 320);
    EXPECT_EQ(a["json"], true);
    EXPECT_EQ(read({"--json", "false"})["json"], false);
    EXPECT_EQ(read({})["imgsz"], 640);  // defaults from the schema
}

TEST(SchemaFlags, BareWordsFillThePositionalsInOrder) {
    const Json o = read({"in.safetensors", "--imgsz", "64", "out"}, {"src", "dst"});
    EXPECT_EQ(o["src"], "in.safetensors");
    EXPECT_EQ(o["dst"], "out");
    // A key=value word of the schema is an option, not a positional; other '=' words are paths.
    const Json k = read({"dst=x", "a=b.jpg"}, {"src"});
    EXPECT_EQ(k["dst"], "x");
    EXPECT_EQ(k["src"], "a=b.jpg");
}

TEST(SchemaFlags, WhatFitsNowhereIsRefusedByName) {
    auto where = [](const std::vector<std::string>& words,
                    std::vector<std::string> positionals = {}) {
        try {
            read(words, positionals);
        } catch (const InputError& e) {
            return e.where();
        }
        return std::string("accepted");
    };
    EXPECT_EQ(where({"a", "b"}, {"src"}), "b");         // one bare word too many
    EXPECT_EQ(where({"--imgsize", "3"}), "--imgsize");  // an unknown flag
    EXPECT_EQ(where({"imgsize=3"}), "imgsize");         // an unknown key (the schema's hint)
    EXPECT_EQ(where({"--imgsz", "big"}), "imgsz");      // the schema converts flag values too
    EXPECT_EQ(where({"--imgsz", "16"}), "imgsz");       // and checks their range
    EXPECT_EQ(where({"--imgsz"}), "--imgsz");           // a value is missing
}

TEST(SchemaFlags, ACommandsOwnFlagIsNotShadowed) {
    CLI::App app{"test", "crucible test"};
    std::string own;
    app.add_option("--src", own, "the command's own");
    SchemaFlags flags(app, schema());
    std::vector<std::string> extras;
    parse_words(app, {"--src", "x"}, &extras);
    EXPECT_EQ(own, "x");
    EXPECT_TRUE(flags.key_values().empty());
}

}  // namespace
}  // namespace crucible::cli
