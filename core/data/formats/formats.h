#pragma once
// The per-format readers and writers behind load_detection_dataset / save_detection_dataset.
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/data/dataset_io.h"
#include "core/data/formats/data_yaml.h"

namespace crucible::data {

// Label file of an image: the last "/images/" becomes "/labels/", the extension ".txt".
std::filesystem::path yolo_label_path(const std::filesystem::path& image);

LoadResult load_yolo(const std::filesystem::path& yaml_path, const LoadOptions& options);
std::filesystem::path save_yolo(const DetectionDataset& dataset, const std::filesystem::path& out,
                                ImageFiles files);

LoadResult load_coco(const std::filesystem::path& json_path, const LoadOptions& options);
std::filesystem::path save_coco(const DetectionDataset& dataset, const std::filesystem::path& out,
                                ImageFiles files);

LoadResult load_voc(const std::filesystem::path& folder, const LoadOptions& options);
std::filesystem::path save_voc(const DetectionDataset& dataset, const std::filesystem::path& out,
                               ImageFiles files);

}  // namespace crucible::data
