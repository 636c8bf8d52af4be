#pragma once
// `crucible dataset validate`: every problem of a detection dataset with "file:line", plus
// statistics (images per split, instances per class, background images, box size histogram).
#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/base/json.h"
#include "core/data/dataset_io.h"

namespace crucible::data {

// Upper edges of the relative box area (w*h, normalized) histogram bins; the last bin is open.
inline constexpr double kBoxAreaEdges[] = {0.0001, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5};
inline constexpr std::size_t kBoxAreaBins = sizeof(kBoxAreaEdges) / sizeof(double) + 1;

struct DatasetStats {
    std::size_t images = 0;             // usable images
    std::size_t background_images = 0;  // usable images without boxes (counted, not flagged)
    std::size_t dropped_images = 0;
    std::size_t instances = 0;
    std::map<std::string, std::size_t> images_per_split;
    std::vector<std::size_t> instances_per_class;  // index = class id
    std::vector<std::size_t> images_per_class;
    std::vector<std::size_t> box_area_histogram = std::vector<std::size_t>(kBoxAreaBins, 0);
};

DatasetStats compute_stats(const DetectionDataset& dataset);

struct ValidationReport {
    std::string path;
    std::string format;  // "yolo", "coco", "voc", or "" when nothing could be read
    std::vector<std::string> class_names;
    DatasetStats stats;
    std::vector<DatasetProblem> problems;
    std::size_t errors() const;
    std::size_t warnings() const;
    bool ok() const { return errors() == 0; }
    Json to_json() const;
    std::string to_text(std::size_t max_problems = 200) const;
};

// Loads with full image checks (LoadOptions::check_images is forced on). Never throws for bad
// input: a dataset that cannot be read at all gives a report with that one error.
ValidationReport validate_dataset(const std::filesystem::path& path,
                                  DatasetFormat format = DatasetFormat::Auto,
                                  LoadOptions options = {});

}  // namespace crucible::data
