#pragma once
// Where `crucible train` puts a run: runs/<task>/<name> under the current folder (project= and
// name= override; train, train2, train3, ... rather than overwriting, as users of the yolo CLI
// expect). Every run folder is a job folder; its layout is JobFolder (core/base/job_folder.h).
#include <filesystem>
#include <string>

#include "core/base/job_folder.h"

namespace crucible::engine {

// Claims a new run folder: <project or base/runs/<task_folder>>/<name or "train">, then name2,
// name3, ... when taken (unless exist_ok). The folder is created (the claim is atomic).
// Throws InputError("name", ...) for a name with path separators or "..".
std::filesystem::path claim_run_folder(const std::filesystem::path& base,
                                       const std::string& task_folder, const std::string& project,
                                       const std::string& name, bool exist_ok);

}  // namespace crucible::engine
