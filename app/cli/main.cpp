// crucible: the command line (datasets, local training, validation, export, projects, remotes).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "app/cli/command.h"
#include "core/base/error.h"

namespace crucible::cli {

static std::vector<Command>& registry() {
    static std::vector<Command> all;
    return all;
}

const std::vector<Command>& commands() { return registry(); }

RegisterCommand::RegisterCommand(Command command) { registry().push_back(std::move(command)); }

static void print_usage() {
    std::printf("crucible %s — datasets, training and evaluation without Python\n\n", CRUCIBLE_VERSION);
    std::printf("usage: crucible <command> [arguments]\n\ncommands:\n");
    auto sorted = commands();
    std::sort(sorted.begin(), sorted.end(), [](const Command& a, const Command& b) { return a.name < b.name; });
    for (const auto& c : sorted) std::printf("  %-10s %s\n", c.name.c_str(), c.summary.c_str());
    std::printf("\n'crucible <command> --help' explains a command.\n");
}

static int cli_main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        print_usage();
        return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version" || args[0] == "version") {
        std::printf("crucible %s\n", CRUCIBLE_VERSION);
        return 0;
    }
    for (const auto& c : commands()) {
        if (c.name == args[0]) return c.run(std::vector<std::string>(args.begin() + 1, args.end()));
    }
    std::fprintf(stderr, "crucible: unknown command '%s'\n\n", args[0].c_str());
    print_usage();
    return 2;
}

}  // namespace crucible::cli

int main(int argc, char** argv) { return crucible::run_at_boundary("crucible", crucible::cli::cli_main, argc, argv); }
