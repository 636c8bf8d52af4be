#pragma once
// The studio's view of a detection dataset in the project for browsing and editing: images with
// their row ids, boxes and tags (one export of the dataset), class names and colours. Edits go
// through core/store/dataset_edit.h.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/data/detection_types.h"

namespace crucible::store {
class Project;
}

namespace crucible::ui {

using ImageTags = std::map<std::string, std::string>;  // free-form key=value pairs

struct DatasetImage {
    std::int64_t id = 0;
    std::filesystem::path path;  // absolute
    std::string split;
    int width = 0, height = 0;
    std::vector<data::Box> boxes;
    ImageTags tags;
};

struct DatasetContent {
    std::int64_t dataset_id = 0;
    std::string format;  // the label files it came from: "yolo", "coco", "voc", ...
    std::vector<std::string> class_names;
    std::vector<std::string> class_colors;  // "#rrggbb" or "" (the palette), by class
    std::vector<DatasetImage> images;       // in row order
};

DatasetContent load_dataset_content(store::Project& project, std::int64_t dataset_id);

}  // namespace crucible::ui
