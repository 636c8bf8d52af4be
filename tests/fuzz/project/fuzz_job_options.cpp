// libFuzzer target for what an authenticated client sends to submit a job or push a dataset:
// the JSON body (core/base/json.h, depth-limited), the submit request (core/net/api_types.h),
// the task options resolved against a schema (core/base/options_schema.h), every path option
// judged by the agent's path policy (core/jobs/path_policy.h) and a dataset manifest
// (core/jobs/dataset_manifest.h). Any bytes must be rejected with crucible::InputError or come
// out as a request whose paths the policy allowed: bare names or absolute paths in the root.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "core/base/error.h"
#include "core/base/json.h"
#include "core/base/options_schema.h"
#include "core/jobs/dataset_manifest.h"
#include "core/jobs/path_policy.h"
#include "core/net/api_types.h"
#include "tests/fuzz/project/fuzz_require.h"

namespace {

const crucible::OptionSchema& schema() {
    static const crucible::OptionSchema s =
        crucible::OptionSchema::from_json(crucible::Json::parse(R"({
        "task": "fuzz.task", "title": "fuzz",
        "options": [
            {"name": "epochs", "type": "integer", "default": 10, "min": 1, "max": 10000},
            {"name": "lr", "type": "number", "default": 0.01, "min": 0},
            {"name": "optimizer", "type": "enum", "default": "sgd", "enum": ["sgd", "adamw"]},
            {"name": "amp", "type": "boolean", "default": true},
            {"name": "classes", "type": "list", "default": []},
            {"name": "data", "type": "path", "default": ""},
            {"name": "model", "type": "path", "default": "yolov8n"}
        ]})"));
    return s;
}

const crucible::jobs::PathPolicy& policy() {
    static const crucible::jobs::PathPolicy p({"/fuzz-root/shared"}, "/fuzz-root/agent");
    return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 256 * 1024) return 0;  // bodies are capped by the server; keep runs fast
    const std::string text(reinterpret_cast<const char*>(data), size);
    crucible::Json body;
    try {
        body = crucible::parse_json(text, "request body");
    } catch (const crucible::InputError&) {
        return 0;
    }
    try {
        const auto request = crucible::net::SubmitRequest::from_json(body);
        require(request.priority >= -100 && request.priority <= 100);
        const crucible::Json resolved = schema().resolve(request.options);
        for (const char* name : {"data", "model"}) {
            const std::string value = resolved.at(name).get<std::string>();
            const std::string out = policy().resolve(name, value);
            require(out == value || std::filesystem::path(out).is_absolute());
            if (out != value || out.find('/') != std::string::npos)
                require(out.rfind("/fuzz-root/shared", 0) == 0);
        }
    } catch (const crucible::InputError&) {
    }
    try {
        const auto manifest = crucible::jobs::DatasetManifest::from_json(body);
        require(!manifest.files.empty());
        for (const auto& [path, sha] : manifest.files) {
            require(path.is_relative());
            require(sha.size() == 64);
            for (const auto& part : path)
                require(part != ".." && part != ".");
        }
    } catch (const crucible::InputError&) {
    }
    return 0;
}
