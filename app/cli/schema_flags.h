#pragma once
// A schema's options on the command line (core/base/options_schema.h), one way for
// `crucible train <task>` and every task command: `key=value` words (the `yolo train epochs=40`
// habit our users bring) and `--key value` flags, which CLI11 reads like every other flag of the
// CLI. Both become the same key=value words for the schema, which converts and checks them: one
// validator for the CLI, the studio's forms and the worker.
#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "core/base/options_schema.h"

namespace crucible::cli {

class SchemaFlags {
  public:
    // Adds `--<name>` to `app` for every option of `schema` that `app` has no flag of that name
    // for already; a Boolean may stand alone (--json).
    SchemaFlags(CLI::App& app, const OptionSchema& schema);
    // After parsing: the flags given, as key=value words in the schema's order.
    std::vector<std::string> key_values() const;

  private:
    struct Flag {
        std::string name;
        bool boolean = false;
        std::string value;
        CLI::Option* option = nullptr;
    };
    std::vector<std::unique_ptr<Flag>> flags_;  // stable addresses: CLI11 writes into `value`
};

// The words CLI11 left, sorted out for the schema: `key=value` stays as it is (an unknown key is
// the schema's to refuse, with its "did you mean"); a bare word fills the next of `positionals`,
// and a bare word beyond them is an InputError naming it.
std::vector<std::string> schema_words(const OptionSchema& schema,
                                      const std::vector<std::string>& words,
                                      const std::vector<std::string>& positionals);

// A command's words read against `schema` in one go: `app` gets -h/--help (the caller prints
// the help, with print_schema_options), a flag per schema option, and the command's own flags
// the caller added; what is left goes through schema_words. `options` is resolved (defaults
// filled in, every value checked); `help` is set instead for -h, --help or a first word "help".
struct SchemaWords {
    bool help = false;
    Json options;
};
SchemaWords read_schema_words(CLI::App& app, const OptionSchema& schema,
                              const std::vector<std::string>& words,
                              const std::vector<std::string>& positionals = {});

// The schema's options by group (in the order groups first appear) with their defaults, choices
// and help, as --help shows them.
void print_schema_options(const OptionSchema& schema);

}  // namespace crucible::cli
