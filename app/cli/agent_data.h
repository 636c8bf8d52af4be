#pragma once
// The agent's data folder as `crucible agent ...` commands take it (--data): checked once here
// for every command that edits what the agent keeps there (tokens, the mirror settings, peers).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include "core/base/environment.h"

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"

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

// The folder's agent.json as an object (empty when there is none yet), for a command to edit
// one field of and write back.
inline Json read_agent_json(const std::filesystem::path& dir) {
    const auto file = dir / "agent.json";
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return Json::object();
    Json j = read_json_file(file);
    if (!j.is_object()) throw InputError(path_to_utf8(file), "expected a JSON object");
    return j;
}

// A secret a command stores for the agent, never on its command line: $`variable`, or else one
// line of standard input after `prompt` on stderr. InputError naming `what` when neither gives
// one.
inline std::string secret_input(const char* variable, const std::string& prompt,
                                const std::string& what) {
    std::string secret = environment_variable(variable).value_or("");
    if (secret.empty()) {
        std::fprintf(stderr, "%s: ", prompt.c_str());
        std::getline(std::cin, secret);
        while (!secret.empty() && (secret.back() == '\r' || secret.back() == '\n'))
            secret.pop_back();
    }
    if (secret.empty())
        throw InputError(what, std::string("none on standard input or in $") + variable);
    return secret;
}

}  // namespace crucible::cli
