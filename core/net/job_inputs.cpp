#include "core/net/job_inputs.h"

#include <filesystem>
#include <system_error>

#include "core/base/file_io.h"

namespace crucible::net {

namespace fs = std::filesystem;

Json find_task_schema(const Json& tasks, const std::string& task) {
    if (!tasks.is_array()) return nullptr;
    for (const auto& t : tasks)
        if (t.is_object() && t.value("task", std::string()) == task) return t;
    return nullptr;
}

namespace {

bool is_reference(const std::string& value) {
    return value.rfind("dataset:", 0) == 0 || value.rfind("blob:", 0) == 0;
}

}  // namespace

Json upload_local_inputs(ApiClient& client, const Json& task_schema, Json options,
                         const std::function<void(const std::string&)>& progress) {
    if (!task_schema.is_object() || !options.is_object()) return options;
    const Json specs = task_schema.value("options", Json::array());
    for (const auto& spec : specs) {
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
        const bool dataset_yaml = is_file && local.filename() == "data.yaml";
        if (is_dir || dataset_yaml) {
            const fs::path folder = is_dir ? local : local.parent_path();
            if (progress)
                progress("uploading the dataset " + path_to_utf8(folder) + " (" + name + ")");
            *it = "dataset:" + client.push_dataset(folder, path_to_utf8(folder.filename()));
        } else {
            if (progress) progress("uploading " + path_to_utf8(local) + " (" + name + ")");
            *it = "blob:" + client.upload_blob(local) + "/" + path_to_utf8(local.filename());
        }
    }
    return options;
}

}  // namespace crucible::net
