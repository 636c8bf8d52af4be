#pragma once
// The one way a `crucible` command reads its `--flag value` words: the command describes them in
// a CLI::App (CLI11: types, ranges, required positionals, help text) and hands it its words here.
// --help prints the app's help; a parse error becomes an InputError that names the flag, so main
// prints "crucible: error: --seed: ..." and exits 1 like every other input error. key=value task
// options (epochs=40) are not flags: a command that takes them gets them back as extras and gives
// them to the option schema (core/base/options_schema.h) unchanged.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace crucible::cli {

enum class Parsed {
    Run,         // the options are set: run the command
    HelpPrinted  // --help or -h was given and the help is on stdout: return 0
};

// Parses `words` (those after the command's name) into `app`. Words no option or positional
// takes: one starting with '-' is an unknown option; the others are appended to `extras` in order
// when it is given, otherwise the first is an "unexpected argument". Throws InputError.
Parsed parse_words(CLI::App& app, const std::vector<std::string>& words,
                   std::vector<std::string>* extras = nullptr);

// For unsigned options (seeds, sizes): CLI11 reads "-1" into an unsigned as its wrap-around
// (strtoull), so such options check the sign first.
const CLI::Validator& non_negative();

}  // namespace crucible::cli
