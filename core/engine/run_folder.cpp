#include "core/engine/run_folder.h"

#include <system_error>

#include "core/base/error.h"
#include "core/base/file_io.h"

namespace crucible::engine {

std::filesystem::path claim_run_folder(const std::filesystem::path& base,
                                       const std::string& task_folder, const std::string& project,
                                       const std::string& name, bool exist_ok) {
    const std::string stem = name.empty() ? "train" : name;
    if (stem == "." || stem == ".." || stem.find_first_of("/\\:") != std::string::npos)
        throw InputError("name", "'" + name + "' must be a plain folder name (no path separators)");
    const std::filesystem::path parent = project.empty()
                                             ? base / "runs" / path_from_utf8(task_folder)
                                             : base / path_from_utf8(project);
    std::filesystem::create_directories(parent);
    if (exist_ok) {
        const auto dir = parent / path_from_utf8(stem);
        std::filesystem::create_directories(dir);
        return dir;
    }
    for (int i = 1; i < 100000; ++i) {
        const std::string candidate = i == 1 ? stem : stem + std::to_string(i);
        const auto dir = parent / path_from_utf8(candidate);
        std::error_code ec;
        if (std::filesystem::create_directory(dir, ec))
            return dir;  // false when it exists: try the next
        if (ec) throw Error(path_to_utf8(dir) + ": cannot create run folder: " + ec.message());
    }
    throw Error(path_to_utf8(parent) + ": no free run name for '" + stem + "'");
}

}  // namespace crucible::engine
