#include "core/engine/task.h"

#include "core/engine/device.h"

#include <ATen/detail/CUDAHooksInterface.h>

#include <algorithm>

#include "core/base/error.h"
#include "core/engine/task_commands.h"

namespace crucible::engine {

TaskRegistry& TaskRegistry::instance() {
    static TaskRegistry registry;
    return registry;
}

void TaskRegistry::add(TaskInfo info) {
    if (info.id.empty() || !info.make) throw Error("task registration without id or factory");
    if (find(info.id)) throw Error("task '" + info.id + "' registered twice");
    for (const auto& alias : info.aliases)
        if (find(alias)) throw Error("task alias '" + alias + "' registered twice");
    if (info.folder.empty()) info.folder = info.id.substr(0, info.id.find('.'));
    tasks_.push_back(std::make_unique<TaskInfo>(std::move(info)));
}

const TaskInfo* TaskRegistry::find(const std::string& name) const {
    for (const auto& t : tasks_) {
        if (t->id == name) return t.get();
        if (std::find(t->aliases.begin(), t->aliases.end(), name) != t->aliases.end())
            return t.get();
    }
    return nullptr;
}

const TaskInfo& TaskRegistry::get(const std::string& name) const {
    if (const TaskInfo* info = find(name)) return *info;
    std::string known;
    for (const TaskInfo* t : all())
        known += (known.empty() ? "" : ", ") + t->id;
    throw InputError(
        "task", "unknown task '" + name + "' (known: " + (known.empty() ? "none" : known) + ")");
}

std::vector<const TaskInfo*> TaskRegistry::all() const {
    std::vector<const TaskInfo*> out;
    for (const auto& t : tasks_)
        out.push_back(t.get());
    std::sort(out.begin(), out.end(),
              [](const TaskInfo* a, const TaskInfo* b) { return a->id < b->id; });
    return out;
}

RegisterTask::RegisterTask(TaskInfo info) {
    TaskRegistry::instance().add(std::move(info));
}

namespace {

// The CUDA runtime this LibTorch was built with ("13.0"), or "none" for a CPU-only build.
std::string cuda_runtime_text() {
    try {
        const long v = at::detail::getCUDAHooks().versionCUDART();
        return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
    } catch (const std::exception&) {
        return "none";
    }
}

}  // namespace

Json describe_tasks() {
    Json tasks = Json::array();
    for (const TaskInfo* info : TaskRegistry::instance().all()) {
        Json schema = info->make()->schema().to_json();
        schema["task"] = info->id;
        schema["title"] = info->title;
        schema["aliases"] = info->aliases;
        schema["dataset_kind"] = info->dataset_kind;
        // The commands an agent runs as jobs, with their options and the one it refuses.
        Json commands = Json::object();
        for (const TaskCommand* command : TaskCommands::instance().of_task(info->id)) {
            if (command->output_option.empty()) continue;
            Json c = command->options().to_json();
            c["output_option"] = command->output_option;
            commands[command->name] = std::move(c);
        }
        schema["commands"] = std::move(commands);
        tasks.push_back(std::move(schema));
    }
    return {{"version", CRUCIBLE_VERSION},
            {"libtorch", TORCH_VERSION},
            {"cuda_runtime", cuda_runtime_text()},
            {"tasks", tasks}};
}

Json describe_devices() {
    return {{"libtorch", TORCH_VERSION},
            {"cuda_runtime", cuda_runtime_text()},
            {"cuda_devices", cuda_device_uuids()}};
}

}  // namespace crucible::engine
