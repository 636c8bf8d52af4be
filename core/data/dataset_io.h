#pragma once
// Reading and writing detection datasets in the standard formats (SPECS.md "Detection
// datasets"): Ultralytics YOLO (data.yaml + labels/*.txt), COCO JSON, Pascal VOC XML.
// Every reader collects problems with "file:line" instead of stopping at the first one.
#include <filesystem>
#include <string>
#include <vector>

#include "core/data/dataset_problem.h"
#include "core/data/detection_types.h"
#include "core/data/image_io.h"

namespace crucible::data {

enum class DatasetFormat { Auto, Yolo, Coco, Voc };

DatasetFormat parse_dataset_format(const std::string& text);  // "auto", "yolo", "coco", "voc"
const char* dataset_format_name(DatasetFormat format);

struct LoadOptions {
    // Read every image file completely: missing, empty, truncated JPEG/PNG, over the pixel limit
    // (what validation does). Also fills width/height.
    bool check_images = false;
    // Fill width/height from the image headers (a few KiB per image, no decode).
    bool read_image_sizes = false;
    // data.yaml `path`/`train`/... and list entries may point outside the dataset folder only
    // when this is set (otherwise refused as path traversal).
    bool allow_outside_root = false;
    ImageLimits image_limits;
    std::uint64_t max_label_bytes = 16ull << 20;      // a label or annotation text file
    std::uint64_t max_annotation_bytes = 1ull << 30;  // a COCO JSON
};

struct LoadResult {
    DetectionDataset dataset;
    std::vector<DatasetProblem> problems;  // images with problems are dropped from `dataset`
    std::size_t dropped_images = 0;  // images (or annotation files) that were dropped for errors
};

// The errors of a load as log lines: the first `limit` as "where: what", then one line with their
// count, how many images were left out and the command that lists them all. Empty when the load
// had no error (warnings are not listed).
std::vector<std::string> load_problem_lines(const LoadResult& loaded, const std::string& source,
                                            int limit);

// Loads a dataset. `path` is a data.yaml (YOLO), a COCO .json, a folder of VOC .xml files (with
// images beside them or in a JPEGImages sibling), or a folder that holds one of these (Auto).
// Throws InputError only when nothing can be read at all (missing path, YAML that is not a map).
LoadResult load_detection_dataset(const std::filesystem::path& path,
                                  DatasetFormat format = DatasetFormat::Auto);
LoadResult load_detection_dataset(const std::filesystem::path& path, DatasetFormat format,
                                  const LoadOptions& options);
// The format Auto picks for `path`; InputError naming the path when none fits.
DatasetFormat detect_dataset_format(const std::filesystem::path& path);

// How a written dataset gets its images: copies (a dataset of its own), or hard links where
// the file system allows (a snapshot of the same images: no second copy of the bytes; a copy
// where links fail).
enum class ImageFiles { Copy, Link };

// Writes `dataset` in `format` under `out` (images placed as `files` says, labels written).
// Returns the main file (data.yaml, annotations.json, or the folder for VOC).
std::filesystem::path save_detection_dataset(const DetectionDataset& dataset,
                                             const std::filesystem::path& out, DatasetFormat format,
                                             ImageFiles files = ImageFiles::Copy);

// Writes each image's YOLO label file from `dataset`'s boxes, beside the image as YOLO keeps them
// (the last images/ folder becomes labels/, the extension .txt), atomically; a file that holds the
// same boxes already is left alone. Returns how many files were written. For saving edits back
// into a YOLO dataset.
std::size_t write_yolo_label_files(const DetectionDataset& dataset);

// Writes each image's boxes into the VOC annotation file it was read from (its other elements
// kept, its <object>s written anew), atomically; files whose boxes (by class name) are the same
// are left alone; a classes.txt gets the class names. `folder` is the VOC dataset's folder, as
// imported. Returns how many files were written. InputError naming the image when its annotation
// file cannot be found or read.
std::size_t write_voc_annotation_files(const DetectionDataset& dataset,
                                       const std::filesystem::path& folder);

// The data.yaml of a YOLO dataset whose root is `root` (root/data.yaml, or its one .yaml);
// empty when there is none.
std::filesystem::path find_yolo_yaml(const std::filesystem::path& root);
// Puts `names` (and `nc`, when the file has one) into a data.yaml, keeping its other keys; its
// comments do not survive the rewrite. Returns false, without writing, when it has those names
// already. InputError naming the file when it is not a data.yaml.
bool write_yolo_class_names(const std::filesystem::path& yaml,
                            const std::vector<std::string>& names);

}  // namespace crucible::data
