// parse_words: every way a command's flags can be wrong ends in an InputError whose `where` is
// the flag, so `crucible: error: --n: ...` tells the user what to fix; --help prints and runs
// nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/cli/cli_parser.h"
#include "core/base/error.h"

namespace crucible::cli {
namespace {

// A command shaped like `crucible dataset preview`: a positional, integer and number flags with
// ranges, a text flag and a switch.
struct Command {
    CLI::App app{"test command", "crucible test"};
    std::string data, split = "train";
    int n = 16;
    double mosaic = 1.0;
    std::uint64_t seed = 0;
    bool json = false;
    Command() {
        app.add_option("DATA", data, "dataset")->required();
        app.add_option("--n", n, "samples")->check(CLI::Range(1, 256));
        app.add_option("--mosaic", mosaic, "probability")->check(CLI::Range(0.0, 1.0));
        app.add_option("--seed", seed, "seed")->check(non_negative());
        app.add_option("--split", split, "split");
        app.add_flag("--json", json, "JSON output");
    }
};

TEST(CliParser, SetsOptionsAndPositionalsInOrder) {
    Command c;
    std::vector<std::string> extras;
    ASSERT_EQ(parse_words(
                  c.app, {"data.yaml", "--n", "4", "epochs=3", "--mosaic=0.5", "--json", "lr0=0.1"},
                  &extras),
              Parsed::Run);
    EXPECT_EQ(c.data, "data.yaml");
    EXPECT_EQ(c.n, 4);
    EXPECT_DOUBLE_EQ(c.mosaic, 0.5);
    EXPECT_TRUE(c.json);
    EXPECT_EQ(c.split, "train");  // defaults stay
    EXPECT_EQ(extras, (std::vector<std::string>{"epochs=3", "lr0=0.1"}));
}

TEST(CliParser, HelpPrintsTheAppsHelpAndRunsNothing) {
    for (const char* help : {"--help", "-h"}) {
        Command c;
        testing::internal::CaptureStdout();
        const Parsed parsed = parse_words(c.app, {help});  // DATA is required, yet help wins
        const std::string out = testing::internal::GetCapturedStdout();
        EXPECT_EQ(parsed, Parsed::HelpPrinted) << help;
        EXPECT_NE(out.find("crucible test"), std::string::npos) << out;
        EXPECT_NE(out.find("--mosaic"), std::string::npos) << out;
    }
}

TEST(CliParser, ErrorsNameTheFlag) {
    struct Case {
        std::vector<std::string> words;
        std::string where;  // InputError::where()
        std::string says;   // part of the message
    };
    const std::vector<Case> cases = {
        {{"d", "--bogus", "1"}, "--bogus", "unknown option"},
        {{"d", "-x"}, "-x", "unknown option"},
        {{"d", "--n"}, "--n", "needs a value"},
        {{"d", "--split"}, "--split", "needs a value"},
        {{"d", "--n", "300"}, "--n", "must be between 1 and 256, got 300"},
        {{"d", "--n", "0"}, "--n", "must be between 1 and 256, got 0"},
        {{"d", "--mosaic", "1.5"}, "--mosaic", "must be between 0 and 1, got 1.5"},
        {{"d", "--n", "abc"}, "--n", "expects an integer, got 'abc'"},
        {{"d", "--n", "2.5"}, "--n", "expects an integer, got '2.5'"},
        {{"d", "--seed", "x1"}, "--seed", "expects an integer, got 'x1'"},
        {{"d", "--seed", "-1"}, "--seed", "must not be negative"},
        {{"d", "--mosaic", "lots"}, "--mosaic", "expects a number, got 'lots'"},
        {{}, "DATA", "is required"},
        {{"d", "e"}, "e", "unexpected argument"},
    };
    for (const auto& c : cases) {
        Command command;
        std::string words;
        for (const auto& w : c.words)
            words += " " + w;
        try {
            parse_words(command.app, c.words);
            ADD_FAILURE() << "no error for:" << words;
        } catch (const InputError& e) {
            EXPECT_EQ(e.where(), c.where) << words << " -> " << e.what();
            EXPECT_EQ(std::string(e.what()).rfind(c.where + ": ", 0), 0u) << e.what();
            EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos)
                << words << " -> " << e.what();
        }
    }
}

TEST(CliParser, LongerFlagIsNotMistakenForItsPrefix) {
    CLI::App app{"prefixes", "crucible test"};
    int max = 0, max_objects = 0;
    app.add_option("--max", max, "")->check(CLI::Range(0, 10));
    app.add_option("--max-objects", max_objects, "")->check(CLI::Range(1, 100));
    try {
        parse_words(app, {"--max-objects", "500"});
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_EQ(e.where(), "--max-objects") << e.what();
    }
}

}  // namespace
}  // namespace crucible::cli
