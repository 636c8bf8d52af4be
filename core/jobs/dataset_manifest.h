#pragma once
// The manifest a client pushes to make a dataset (POST /v1/datasets): file paths inside the
// dataset and the blob each one is. Parsing it is pure (no files), so it can be fuzzed.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/base/json.h"

namespace crucible::jobs {

struct DatasetManifest {
    std::string name;
    std::vector<std::pair<std::filesystem::path, std::string>> files;  // relative path, sha256
    Json canonical = Json::array();                                    // sorted [path, sha256]

    // From the body of POST /v1/datasets. Throws InputError naming the entry for a path that
    // is empty, absolute, leaves the dataset, holds '.', '..', a backslash, a colon or a
    // reserved device name, is over 255 bytes a part or 4096 in all, is given twice, or takes
    // the name of the dataset's own bookkeeping (manifest.json, .complete).
    static DatasetManifest from_json(const Json& body);
    std::string id() const;
};

}  // namespace crucible::jobs
