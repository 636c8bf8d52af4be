#pragma once
// The `crucible` command line is a set of command groups (dataset, train, val, project, ...).
// Each group lives in its own cmd_<group>.cpp and registers itself with a static
// RegisterCommand, so adding a group never touches main.cpp.
#include <optional>
#include <string>
#include <vector>

namespace crucible::cli {

struct Command {
    std::string name;     // first word after `crucible`
    std::string summary;  // one line for `crucible --help`
    // Receives the words after the group name; returns the process exit code. Throws on error
    // (main turns exceptions into "crucible: error: ..." and exit code 1).
    int (*run)(const std::vector<std::string>& args);
};

const std::vector<Command>& commands();

struct RegisterCommand {
    explicit RegisterCommand(Command command);
};

// Second-level commands such as `crucible dataset synth`: several files may each add
// subcommands to one group; main.cpp dispatches `crucible <group> <sub> ...` to them and lists
// them in `crucible <group> --help`. A group may have both a Command and subcommands: the
// Command runs when the second word names no subcommand.
struct Subcommand {
    std::string group;  // "dataset"
    std::string name;   // "synth"
    std::string summary;
    int (*run)(const std::vector<std::string>& args);  // words after the subcommand name
};

const std::vector<Subcommand>& subcommands();

struct RegisterSubcommand {
    explicit RegisterSubcommand(Subcommand subcommand);
};

// Words that name no command or group may still mean something to a part of the CLI that knows
// more (a task's own tools: `crucible llm tokenize`, found through the engine's task commands).
// `run` returns nullopt when the words are not its; `usage` adds lines to `crucible --help`.
struct CommandResolver {
    std::optional<int> (*run)(const std::vector<std::string>& args);
    void (*usage)();
};

const std::vector<CommandResolver>& resolvers();

struct RegisterResolver {
    explicit RegisterResolver(CommandResolver resolver);
};

}  // namespace crucible::cli
