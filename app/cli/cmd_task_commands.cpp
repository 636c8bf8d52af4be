// `crucible val|predict|export <task> ...` and `crucible <task> <tool> ...`: the commands tasks
// register beside themselves (core/engine/task_commands.h). This file only finds them: it names
// no task, so a new task's commands need no change here.
//
//   crucible val detect data=... model=...      crucible export llm model=... adapter=...
//   crucible predict detect --source DIR ...    crucible llm tokenize tokenizer=... text=...
//
// A command's options are its schema's, as key=value words or --key value flags (schema_flags.h).
#include <cstdio>
#include <string>
#include <vector>

#include "app/cli/cli_parser.h"
#include "app/cli/command.h"
#include "app/cli/schema_flags.h"
#include "core/base/error.h"
#include "core/engine/task.h"
#include "core/engine/task_commands.h"

namespace crucible::cli {
namespace {

bool is_help(const std::string& word) {
    return word == "--help" || word == "-h" || word == "help";
}

void print_command_usage(const engine::TaskCommand& command, const std::string& prefix,
                         const OptionSchema& schema) {
    const char* lead = "usage:";
    for (const auto& form : command.usage) {
        std::printf("%s %s %s\n", lead, prefix.c_str(), form.c_str());
        lead = "      ";
    }
    if (command.usage.empty()) std::printf("usage: %s key=value ...\n", prefix.c_str());
    std::printf("\n%s\n",
                (command.description.empty() ? command.summary : command.description).c_str());
    std::printf("\noptions, as key=value or --key value:\n");
    print_schema_options(schema);
}

// A task's command (`prefix` is how the user called it: "crucible val detect"): its usage for no
// words or --help, otherwise its options read from the words, resolved, and the command run.
int run_command(const engine::TaskCommand& command, const std::string& prefix,
                const std::vector<std::string>& words) {
    const OptionSchema schema = command.options();
    if (words.empty()) {
        print_command_usage(command, prefix, schema);
        return 2;
    }
    CLI::App app{command.summary, prefix};
    const SchemaWords read = read_schema_words(app, schema, words, command.positionals);
    if (read.help) {
        print_command_usage(command, prefix, schema);
        return 0;
    }
    return command.run(read.options);
}

// The tasks that answer `verb`, as "detect (detect.yolo), llm (llm.lora)".
std::string tasks_with(const std::string& verb) {
    std::string out;
    for (const auto* c : engine::TaskCommands::instance().named(verb)) {
        const auto* task = engine::TaskRegistry::instance().find(c->task);
        const std::string alias = task && !task->aliases.empty() ? task->aliases[0] : c->task;
        out += (out.empty() ? "" : ", ") + alias + " (" + c->task + ")";
    }
    return out.empty() ? "none" : out;
}

void print_verb_usage(const std::string& verb) {
    std::printf("usage: crucible %s <task> key=value ...\n\ntasks:\n", verb.c_str());
    for (const auto* c : engine::TaskCommands::instance().named(verb))
        std::printf("  %-20s %s\n", c->task.c_str(), c->summary.c_str());
    std::printf("\n'crucible %s <task> --help' lists the task's options.\n", verb.c_str());
}

int run_verb(const std::string& verb, const std::vector<std::string>& args) {
    if (args.empty() || is_help(args[0])) {
        print_verb_usage(verb);
        return args.empty() ? 2 : 0;
    }
    const engine::TaskInfo& task = engine::TaskRegistry::instance().get(args[0]);
    const auto* command = engine::TaskCommands::instance().find(task.id, verb);
    if (!command)
        throw InputError(args[0], "the task " + task.id + " has no " + verb +
                                      " command (tasks with one: " + tasks_with(verb) + ")");
    return run_command(*command, "crucible " + verb + " " + args[0],
                       {args.begin() + 1, args.end()});
}

template <int Verb>
int run_verb_n(const std::vector<std::string>& args) {
    return run_verb(engine::kTaskVerbs[Verb], args);
}

const RegisterCommand val_cmd({"val", "validate a model or predictions (val <task> ...)",
                               &run_verb_n<0>});
const RegisterCommand predict_cmd({"predict", "run a model on inputs (predict <task> ...)",
                                   &run_verb_n<1>});
const RegisterCommand export_cmd({"export", "export or convert weights (export <task> ...)",
                                  &run_verb_n<2>});

// The tools of a task, by its id or any alias: `crucible llm tokenize ...`.
std::vector<const engine::TaskCommand*> tools_of(const std::string& task) {
    std::vector<const engine::TaskCommand*> out;
    for (const auto* c : engine::TaskCommands::instance().of_task(task))
        if (!engine::is_task_verb(c->name)) out.push_back(c);
    return out;
}

std::optional<int> run_tool(const std::vector<std::string>& args) {
    const auto* task = engine::TaskRegistry::instance().find(args.at(0));
    const auto tools = task ? tools_of(task->id) : std::vector<const engine::TaskCommand*>{};
    if (tools.empty()) return std::nullopt;
    if (args.size() > 1)
        for (const auto* tool : tools)
            if (tool->name == args[1])
                return run_command(*tool, "crucible " + args[0] + " " + args[1],
                                   {args.begin() + 2, args.end()});
    const bool help = args.size() > 1 && is_help(args[1]);
    if (args.size() > 1 && !help)
        std::fprintf(stderr, "crucible %s: unknown tool '%s'\n\n", args[0].c_str(),
                     args[1].c_str());
    std::printf("usage: crucible %s <tool> [arguments]\n\ntools of %s:\n", args[0].c_str(),
                task->id.c_str());
    for (const auto* tool : tools)
        std::printf("  %-10s %s\n", tool->name.c_str(), tool->summary.c_str());
    return help ? 0 : 2;
}

void tools_usage() {
    for (const auto* task : engine::TaskRegistry::instance().all()) {
        const auto tools = tools_of(task->id);
        if (tools.empty()) continue;
        std::string names;
        for (const auto* t : tools)
            names += (names.empty() ? "" : ", ") + t->name;
        const std::string word = task->aliases.empty() ? task->id : task->aliases.back();
        std::printf("  %-10s (tools of %s: %s)\n", word.c_str(), task->id.c_str(), names.c_str());
    }
}

const RegisterResolver tools_resolver({&run_tool, &tools_usage});

}  // namespace
}  // namespace crucible::cli
