#pragma once
// The agent's data folder as `crucible agent ...` commands take it (--data): checked once here
// for every command that edits what the agent keeps there (tokens, the mirror settings).
#include <filesystem>
#include <string>

#include "core/base/error.h"
#include "core/base/file_io.h"

namespace crucible::cli {

inline std::filesystem::path agent_data_folder(const std::string& data) {
    if (data.empty())
        throw InputError("--data", "name the agent's data folder (the --data of crucible-agent)");
    auto dir = path_from_utf8(data);
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        throw InputError("--data", "'" + data + "' is not a folder");
    return dir;
}

}  // namespace crucible::cli
