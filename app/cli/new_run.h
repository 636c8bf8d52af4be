#pragma once
// A new local run, as `crucible train` and `crucible demo` start one: the options are checked
// against the task's schema, existing relative paths become absolute, runs/<task>/<name> is
// claimed under `base` (project=, name=, exist_ok= from the options) and spec.json written.
#include <filesystem>

#include "core/base/json.h"
#include "core/base/options_schema.h"
#include "core/engine/task.h"

namespace crucible::cli {

// Path options that name an existing file or folder become absolute before they go into
// spec.json, so that a run resumed or re-run from another folder finds its data. Other values
// (model=yolov8n, a path that does not exist and will be reported) stay as given.
void absolutize_paths(Json& options, const OptionSchema& schema);

// Returns the run folder, ready for engine::run_job. InputError for a bad option.
std::filesystem::path prepare_new_run(const engine::TaskInfo& info, Json options,
                                      const std::filesystem::path& base);

}  // namespace crucible::cli
