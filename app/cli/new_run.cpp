#include "app/cli/new_run.h"

#include <system_error>

#include "core/base/file_io.h"
#include "core/engine/run_folder.h"

namespace crucible::cli {

void absolutize_paths(Json& options, const OptionSchema& schema) {
    for (auto& [name, value] : options.items()) {
        if (!value.is_string() || value.get<std::string>().empty()) continue;
        const OptionSpec* spec = schema.find(name);
        if (!spec) continue;
        const auto path = path_from_utf8(value.get<std::string>());
        std::error_code ec;
        if (spec->type != OptionType::Path || path.is_absolute() ||
            !std::filesystem::exists(path, ec))
            continue;
        value = path_to_utf8(std::filesystem::absolute(path, ec).lexically_normal());
    }
}

std::filesystem::path prepare_new_run(const engine::TaskInfo& info, Json options,
                                      const std::filesystem::path& base) {
    const auto schema = info.make()->schema();
    const Json config = schema.resolve(options);
    absolutize_paths(options, schema);
    const auto dir = engine::claim_run_folder(
        base, info.folder, config.value("project", std::string()),
        config.value("name", std::string()), config.value("exist_ok", false));
    write_json_file(JobFolder{dir}.spec(), Json{{"task", info.id}, {"options", options}});
    return dir;
}

}  // namespace crucible::cli
