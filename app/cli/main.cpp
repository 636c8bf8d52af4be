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

const std::vector<Command>& commands() {
    return registry();
}

RegisterCommand::RegisterCommand(Command command) {
    registry().push_back(std::move(command));
}

static std::vector<Subcommand>& sub_registry() {
    static std::vector<Subcommand> all;
    return all;
}

const std::vector<Subcommand>& subcommands() {
    return sub_registry();
}

RegisterSubcommand::RegisterSubcommand(Subcommand subcommand) {
    sub_registry().push_back(std::move(subcommand));
}

static std::vector<CommandResolver>& resolver_registry() {
    static std::vector<CommandResolver> all;
    return all;
}

const std::vector<CommandResolver>& resolvers() {
    return resolver_registry();
}

RegisterResolver::RegisterResolver(CommandResolver resolver) {
    resolver_registry().push_back(resolver);
}

static std::vector<Subcommand> subcommands_of(const std::string& group) {
    std::vector<Subcommand> out;
    for (const auto& s : subcommands())
        if (s.group == group) out.push_back(s);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return out;
}

static void print_group_usage(const std::string& group) {
    std::printf("usage: crucible %s <subcommand> [arguments]\n\nsubcommands:\n", group.c_str());
    for (const auto& s : subcommands_of(group))
        std::printf("  %-10s %s\n", s.name.c_str(), s.summary.c_str());
}

static void print_usage() {
    std::printf("crucible %s — datasets, training and evaluation without Python\n\n",
                CRUCIBLE_VERSION);
    std::printf("usage: crucible <command> [arguments]\n\ncommands:\n");
    auto sorted = commands();
    std::sort(sorted.begin(), sorted.end(),
              [](const Command& a, const Command& b) { return a.name < b.name; });
    for (const auto& c : sorted)
        std::printf("  %-10s %s\n", c.name.c_str(), c.summary.c_str());
    std::vector<std::string> groups;
    for (const auto& s : subcommands())
        if (std::find(groups.begin(), groups.end(), s.group) == groups.end() &&
            std::none_of(sorted.begin(), sorted.end(),
                         [&](const Command& c) { return c.name == s.group; }))
            groups.push_back(s.group);
    std::sort(groups.begin(), groups.end());
    for (const auto& g : groups)
        std::printf("  %-10s (%zu subcommands)\n", g.c_str(), subcommands_of(g).size());
    for (const auto& r : resolvers())
        r.usage();
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
    const auto subs = subcommands_of(args[0]);
    if (!subs.empty() && args.size() > 1) {
        for (const auto& s : subs)
            if (s.name == args[1])
                return s.run(std::vector<std::string>(args.begin() + 2, args.end()));
    }
    for (const auto& c : commands()) {
        if (c.name == args[0]) return c.run(std::vector<std::string>(args.begin() + 1, args.end()));
    }
    if (!subs.empty()) {
        if (args.size() > 1 && args[1] != "--help" && args[1] != "-h")
            std::fprintf(stderr, "crucible %s: unknown subcommand '%s'\n\n", args[0].c_str(),
                         args[1].c_str());
        print_group_usage(args[0]);
        return args.size() > 1 && (args[1] == "--help" || args[1] == "-h") ? 0 : 2;
    }
    for (const auto& r : resolvers())
        if (const auto code = r.run(args)) return *code;
    std::fprintf(stderr, "crucible: unknown command '%s'\n\n", args[0].c_str());
    print_usage();
    return 2;
}

}  // namespace crucible::cli

int main(int argc, char** argv) {
    return crucible::run_at_boundary("crucible", crucible::cli::cli_main, argc, argv);
}
