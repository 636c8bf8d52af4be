#pragma once
// The studio's view of a detection dataset in the project for browsing and editing: images with
// their row ids, boxes and tags (one export of the dataset), and saving one image's boxes back
// (one transaction, the dataset's version hash recomputed so runs can tell the data changed).
// Reads and writes go through core/store's Project database with bound statements.
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
    std::vector<std::string> class_names;
    std::vector<DatasetImage> images;  // in row order
};

DatasetContent load_dataset_content(store::Project& project, std::int64_t dataset_id);
// Every box is checked (data::box_problem); InputError names the image and box at fault.
void save_image_boxes(store::Project& project, std::int64_t dataset_id, std::int64_t image_id,
                      const std::vector<data::Box>& boxes);
std::vector<data::Box> read_image_boxes(store::Project& project, std::int64_t image_id);

}  // namespace crucible::ui
