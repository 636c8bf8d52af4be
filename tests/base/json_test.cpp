// parse_json's hostile cases: nesting beyond kMaxJsonDepth is refused before parsing (with the
// byte where it went too deep), brackets inside strings do not count, and ordinary depth parses.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/base/json.h"

namespace crucible {
namespace {

std::string nested(int depth, char open = '[', char close = ']') {
    return std::string(static_cast<std::size_t>(depth), open) +
           std::string(static_cast<std::size_t>(depth), close);
}

TEST(Json, DeepNestingIsRefusedBeforeParsing) {
    EXPECT_NO_THROW(parse_json(nested(kMaxJsonDepth), "ok"));
    try {
        parse_json(nested(100000), "request body");
        ADD_FAILURE() << "100,000 levels were parsed";
    } catch (const InputError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("request body"), std::string::npos) << m;
        EXPECT_NE(m.find("nested deeper than 256 levels at byte 256"), std::string::npos) << m;
    }
    std::string objects;
    for (int i = 0; i < kMaxJsonDepth + 1; ++i)
        objects += "{\"a\":";
    objects += "1" + std::string(static_cast<std::size_t>(kMaxJsonDepth + 1), '}');
    EXPECT_THROW(parse_json(objects, "objects"), InputError);
}

TEST(Json, BracketsInStringsDoNotCount) {
    const std::string text =
        "{\"s\": \"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"}";
    EXPECT_EQ(json_nesting_exceeds(text, 2), std::string_view::npos);
    EXPECT_EQ(parse_json(text, "strings")["s"].get<std::string>().size(), 2001u);
    EXPECT_EQ(json_nesting_exceeds("[[[]]]", 2), 2u);
    EXPECT_EQ(json_nesting_exceeds("", 2), std::string_view::npos);
    EXPECT_EQ(json_nesting_exceeds("]]]]", 0), std::string_view::npos);  // the parser says why
    EXPECT_THROW(parse_json("]]]]", "unbalanced"), InputError);
}

// A number too large for a double is bad input like any other (found by fuzz_job_options:
// nlohmann's out_of_range escaped as an internal error).
TEST(Json, NumberOverflowIsInputError) {
    for (const char* text : {"1e999999", "[666666e66666666666666]", R"({"epochs": -1e400})"})
        EXPECT_THROW(parse_json(text, "body"), InputError) << text;
    EXPECT_EQ(parse_json("1e300", "body").get<double>(), 1e300);
}

}  // namespace
}  // namespace crucible
