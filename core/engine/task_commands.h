#pragma once
// What a task offers on the command line besides training: the verbs
// `crucible val|predict|export <task> ...` and tools of its own (`crucible <task> <tool> ...`,
// e.g. `crucible llm tokenize`). A plugin registers them beside its task with a static
// RegisterTaskCommand, so the CLI includes no plugin code: it finds a command here by the task's
// id or alias, and says so when a task has no such command.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/base/json.h"
#include "core/base/options_schema.h"

namespace crucible::engine {

// The verbs every task may answer; anything else a task registers is one of its tools.
inline constexpr const char* kTaskVerbs[] = {"val", "predict", "export"};
bool is_task_verb(const std::string& name);

struct TaskCommand {
    std::string task;     // the task's id ("detect.yolo")
    std::string name;     // a verb ("val") or a tool ("tokenize")
    std::string summary;  // one line for --help
    // The command's options, as a schema like a task's training options. The CLI reads them from
    // `key=value` words (the `yolo val data=... model=...` habit) and from `--key value` flags
    // alike (CLI11, app/cli/schema_flags.h), checks them against this schema and hands the
    // resolved options to `run`; --help lists them.
    std::function<OptionSchema()> options;
    // Returns the exit code. Throws on error (the CLI prints "crucible: error: ...").
    std::function<int(const Json& options)> run;
    // Options that may also be given bare, in this order (`crucible export sd SRC DST`).
    std::vector<std::string> positionals = {};
    // The forms of the command for --help, without "crucible <verb> <task>"
    // ("data=PATH/data.yaml predictions=DIR [json=true]"), and what it does, in a few lines.
    std::vector<std::string> usage = {};
    std::string description = {};
    // The Path option naming where the command writes (predict's `project`). A command that has
    // one may also run as an agent's job (core/engine/command_job.h): its output then stays in
    // the job's folder and the agent refuses the option.
    std::string output_option = {};
};

class TaskCommands {
  public:
    static TaskCommands& instance();
    // A second command with the same task and name is an Error.
    void add(TaskCommand command);
    // The command `name` of the task with this id or alias; nullptr when it has none (or the
    // task is unknown: TaskRegistry::get says which tasks there are).
    const TaskCommand* find(const std::string& task, const std::string& name) const;
    // Every command of one task (by id or alias), sorted by name.
    std::vector<const TaskCommand*> of_task(const std::string& task) const;
    // Every task's command of this name (a verb), sorted by task id.
    std::vector<const TaskCommand*> named(const std::string& name) const;

  private:
    std::vector<std::unique_ptr<TaskCommand>> commands_;
};

struct RegisterTaskCommand {
    explicit RegisterTaskCommand(TaskCommand command);
};

}  // namespace crucible::engine
