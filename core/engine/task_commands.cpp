#include "core/engine/task_commands.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/engine/task.h"

namespace crucible::engine {
namespace {

// The task id for an id or alias; the text itself when no task has it.
std::string task_id(const std::string& id_or_alias) {
    const TaskInfo* info = TaskRegistry::instance().find(id_or_alias);
    return info ? info->id : id_or_alias;
}

}  // namespace

bool is_task_verb(const std::string& name) {
    return std::find(std::begin(kTaskVerbs), std::end(kTaskVerbs), name) != std::end(kTaskVerbs);
}

TaskCommands& TaskCommands::instance() {
    static TaskCommands commands;
    return commands;
}

void TaskCommands::add(TaskCommand command) {
    for (const auto& c : commands_)
        if (c->task == command.task && c->name == command.name)
            throw Error("task " + command.task + " registers the command '" + command.name +
                        "' twice");
    commands_.push_back(std::make_unique<TaskCommand>(std::move(command)));
}

const TaskCommand* TaskCommands::find(const std::string& task, const std::string& name) const {
    const std::string id = task_id(task);
    for (const auto& c : commands_)
        if (c->task == id && c->name == name) return c.get();
    return nullptr;
}

std::vector<const TaskCommand*> TaskCommands::of_task(const std::string& task) const {
    const std::string id = task_id(task);
    std::vector<const TaskCommand*> out;
    for (const auto& c : commands_)
        if (c->task == id) out.push_back(c.get());
    std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->name < b->name; });
    return out;
}

std::vector<const TaskCommand*> TaskCommands::named(const std::string& name) const {
    std::vector<const TaskCommand*> out;
    for (const auto& c : commands_)
        if (c->name == name) out.push_back(c.get());
    std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->task < b->task; });
    return out;
}

RegisterTaskCommand::RegisterTaskCommand(TaskCommand command) {
    TaskCommands::instance().add(std::move(command));
}

}  // namespace crucible::engine
