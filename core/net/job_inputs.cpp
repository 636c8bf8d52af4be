#include "core/net/job_inputs.h"

#include <filesystem>
#include <system_error>

#include "core/base/file_io.h"

namespace crucible::net {

namespace fs = std::filesystem;

Json find_task_schema(const Json& tasks, const std::string& task) {
    if (!tasks.is_array()) return nullptr;
    for (const auto& t : tasks) {
        if (!t.is_object()) continue;
        if (t.value("task", std::string()) == task) return t;
        const auto aliases = t.find("aliases");
        if (aliases != t.end() && aliases->is_array())
            for (const auto& a : *aliases)
                if (a.is_string() && a.get<std::string>() == task) return t;
    }
    return nullptr;
}

Json find_command_schema(const Json& tasks, const std::string& task, const std::string& command) {
    const Json schema = find_task_schema(tasks, task);
    if (!schema.is_object()) return nullptr;
    const auto commands = schema.find("commands");
    if (commands == schema.end() || !commands->is_object()) return nullptr;
    const auto found = commands->find(command);
    if (found == commands->end() || !found->is_object()) return nullptr;
    return *found;
}

namespace {

bool is_reference(const std::string& value) {
    return value.rfind("dataset:", 0) == 0 || value.rfind("blob:", 0) == 0;
}

}  // namespace

Json upload_local_inputs(ApiClient& client, const Json& task_schema, Json options,
                         const UploadProgressFn& progress) {
    if (!task_schema.is_object() || !options.is_object()) return options;
    // What goes up: (option, local path, dataset folder?) with their bytes, for one total.
    struct Input {
        std::string option;
        fs::path path;
        bool dataset = false;
        std::uint64_t bytes = 0;
        std::size_t files = 0;
    };
    std::vector<Input> inputs;
    for (const auto& spec : task_schema.value("options", Json::array())) {
        if (!spec.is_object() || spec.value("type", std::string()) != "path") continue;
        const std::string name = spec.value("name", std::string());
        auto it = options.find(name);
        if (it == options.end() || !it->is_string()) continue;
        const std::string value = it->get<std::string>();
        if (value.empty() || is_reference(value)) continue;
        const fs::path local = path_from_utf8(value);
        std::error_code ec;
        const bool is_dir = fs::is_directory(local, ec);
        const bool is_file = !is_dir && fs::is_regular_file(local, ec);
        if (!is_dir && !is_file) continue;  // not on this machine: a path on the server
        Input input{name, local, is_dir || local.filename() == "data.yaml"};
        if (input.dataset) {
            input.path = is_dir ? local : local.parent_path();
            for (const auto& e : fs::recursive_directory_iterator(input.path))
                if (e.is_regular_file()) {
                    input.bytes += e.file_size();
                    ++input.files;
                }
        } else {
            input.bytes = fs::file_size(local);
            input.files = 1;
        }
        inputs.push_back(std::move(input));
    }
    UploadProgress all;
    for (const auto& input : inputs) {
        all.total += input.bytes;
        all.files += input.files;
    }
    for (const auto& input : inputs) {
        const UploadProgress before = all;
        auto report = [&](const UploadProgress& p) {
            all.file = p.file;
            all.done = before.done + p.done;
            all.files_done = before.files_done + p.files_done;
            if (progress) progress(all);
        };
        std::string& value = options[input.option].get_ref<std::string&>();
        if (input.dataset) {
            value = "dataset:" +
                    client.push_dataset(input.path, path_to_utf8(input.path.filename()), report);
        } else {
            UploadProgress one{path_to_utf8(input.path), 0, input.bytes, 0, 1};
            value = "blob:" +
                    client.upload_blob(input.path,
                                       [&](std::uint64_t sent, std::uint64_t) {
                                           one.done = sent;
                                           report(one);
                                       }) +
                    "/" + path_to_utf8(input.path.filename());
        }
        all.done = before.done + input.bytes;
        all.files_done = before.files_done + input.files;
    }
    return options;
}

}  // namespace crucible::net
