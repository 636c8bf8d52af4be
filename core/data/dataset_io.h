#pragma once
// Reading and writing detection datasets in the standard formats (SPECS.md "Detection
// datasets"): Ultralytics YOLO (data.yaml + labels/*.txt), COCO JSON, Pascal VOC XML.
// Every reader collects problems with "file:line" instead of stopping at the first one.
#include <filesystem>
#include <string>
#include <vector>

#include "core/data/detection_types.h"

namespace crucible::data {

enum class DatasetFormat { Auto, Yolo, Coco, Voc };

DatasetFormat parse_dataset_format(const std::string& text);  // "auto", "yolo", "coco", "voc"
const char* dataset_format_name(DatasetFormat format);

struct DatasetProblem {
    std::string where;  // "labels/img1.txt:3", "data.yaml", "images/a.jpg"
    std::string what;
    bool error = true;  // false: a warning (e.g. background image) that is counted, not flagged
};

struct LoadResult {
    DetectionDataset dataset;
    std::vector<DatasetProblem> problems;  // images with problems are dropped from `dataset`
};

// Loads a dataset. `path` is a data.yaml (YOLO), a COCO .json, a folder of VOC .xml files (with
// images beside them or in a JPEGImages sibling), or a folder that holds one of these (Auto).
// Throws InputError only when nothing can be read at all (missing path, YAML that is not a map).
LoadResult load_detection_dataset(const std::filesystem::path& path,
                                  DatasetFormat format = DatasetFormat::Auto);

// Writes `dataset` in `format` under `out` (images copied, labels written). Returns the main
// file (data.yaml, annotations.json, or the folder for VOC).
std::filesystem::path save_detection_dataset(const DetectionDataset& dataset,
                                             const std::filesystem::path& out,
                                             DatasetFormat format);

}  // namespace crucible::data
