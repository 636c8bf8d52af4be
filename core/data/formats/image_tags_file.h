#pragma once
// Image tags beside a YOLO dataset (the production line, the station, the camera an image came
// from): `tags.json` next to data.yaml, a Crucible addition that YOLO trainers ignore.
//
//   {"images/val/a.jpg": {"station": "3", "line": "B"}, ...}
//
// Paths are relative to the file's folder, '/'-separated. The studio's dataset snapshots write
// it, so `crucible val ... tag=station` and the drill-down's per-tag metrics see the tags set in
// the studio; a person may write it by hand for a dataset of their own.
#include <filesystem>
#include <vector>

#include "core/data/dataset_problem.h"
#include "core/data/detection_types.h"

namespace crucible::data {

inline constexpr const char* kImageTagsFileName = "tags.json";

// Gives the dataset's images the tags the file beside `yaml_path` names, if there is one.
// Problems (not an object, a path outside the folder or of no image of the dataset, a tag that
// is not text) are reported naming the file and the entry, and that entry is skipped.
void read_image_tags_beside(const std::filesystem::path& yaml_path, DetectionDataset& dataset,
                            std::vector<DatasetProblem>& problems);

// Writes the tags of `dataset`'s images (at `image_paths`, one per image) beside `yaml_path`;
// nothing when no image has a tag.
void write_image_tags_beside(const std::filesystem::path& yaml_path,
                             const DetectionDataset& dataset,
                             const std::vector<std::filesystem::path>& image_paths);

}  // namespace crucible::data
