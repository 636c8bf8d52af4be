#pragma once
// Files of the person's own machine named in a job's options travel with the job. For every
// option the task's schema types as a path: a local folder (or a local data.yaml, whose folder
// goes) is pushed as a dataset and becomes "dataset:<id>"; any other local file (pretrained
// weights such as yolov8n.pt) is uploaded as a blob and becomes "blob:<sha256>/<file name>". The
// agent turns both references into paths on its side. Values that are not local files (model
// names such as yolov8n, paths on the server, references) are sent as they are.
#include <functional>
#include <string>

#include "core/base/json.h"
#include "core/net/api_client.h"

namespace crucible::net {

// The schema of `task` in a task list (as /v1/info's "tasks"), or null when it is not there.
Json find_task_schema(const Json& tasks, const std::string& task);
// The schema of one of that task's commands an agent runs as a job ("predict"), with its
// "output_option", or null when the agent has no such command.
Json find_command_schema(const Json& tasks, const std::string& task, const std::string& command);

// Returns `options` with local files replaced by the references of their uploads. `progress`
// counts the bytes of every input together; throwing UploadCanceled from it stops the uploads
// (running them again resumes them).
Json upload_local_inputs(ApiClient& client, const Json& task_schema, Json options,
                         const UploadProgressFn& progress = {});

}  // namespace crucible::net
