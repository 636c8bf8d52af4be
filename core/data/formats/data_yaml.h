#pragma once
// Ultralytics data.yaml parsing: pure (yaml-cpp and lexical path work only, no OpenCV), so it can
// be fuzzed.
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/data/dataset_problem.h"

namespace crucible::data {

// A parsed Ultralytics data.yaml. Pure: only lexical path work and is_path_inside.
struct DataYaml {
    std::filesystem::path root;  // absolute, lexically normal
    // "train"/"val"/"test" -> the folders or .txt lists named there (absolute), in order.
    std::map<std::string, std::vector<std::filesystem::path>> splits;
    std::vector<std::string> names;
    std::vector<DatasetProblem> problems;  // warnings (names map with gaps, ...)
};

// Throws InputError naming `yaml_path` (with the line where YAML gives one) for text that is
// not a YAML map, names that are not a list/map, `path`/split entries outside the dataset folder
// (unless allowed), no train/val entry.
DataYaml parse_data_yaml(std::string_view text, const std::filesystem::path& yaml_path,
                         bool allow_outside_root = false);

}  // namespace crucible::data
