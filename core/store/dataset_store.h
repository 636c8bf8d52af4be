#pragma once
// Datasets inside a project: import from a DetectionDataset (any format core/data reads), with
// image hashing, progress and cancellation, all rows in one transaction; export back to a
// DetectionDataset; chat records for LLM data.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/json.h"
#include "core/data/dataset_io.h"
#include "core/data/detection_types.h"
#include "core/store/project.h"

namespace crucible::store {

struct ImportProgress {
    const char* phase = "";  // "hash" (reading images) or "store" (writing rows)
    std::size_t done = 0;    // images finished in this phase
    std::size_t total = 0;
    std::uint64_t bytes = 0;  // image bytes hashed so far
};

struct ImportOptions {
    std::string name;    // dataset name in the project (unique)
    std::string format;  // recorded for information ("yolo", "coco", ...)
    std::function<void(const ImportProgress&)> progress;  // called from the importing thread
    const std::atomic<bool>* cancel = nullptr;            // set to true to stop; nothing is kept
};

// Thrown when ImportOptions::cancel was set; the project is unchanged.
class ImportCanceled : public Error {
  public:
    ImportCanceled() : Error("import canceled") {}
};

struct DatasetInfo {
    std::int64_t id = 0;
    std::string name, kind, source, format, version_hash;
    double created_at = 0;
    std::int64_t images = 0, boxes = 0, classes = 0, chat_records = 0;
    std::uint64_t bytes = 0;
};

struct ImportResult {
    std::int64_t dataset_id = 0;
    std::size_t images = 0, boxes = 0;
    std::uint64_t bytes = 0;
    std::string version_hash;
};

// Imports `dataset` (image paths absolute or relative to dataset.root). Every image is read and
// hashed (an ImageRecord's sha256 is checked when given); the dataset version hash covers class
// names, image hashes, splits and boxes. Rows are written in one transaction: a killed or
// canceled import leaves nothing behind. Throws InputError naming the image or class at fault.
ImportResult import_dataset(Project& project, const data::DetectionDataset& dataset,
                            const ImportOptions& options);

// Loads a dataset (data.yaml, COCO json, VOC folder, or a folder holding one; `format` "auto",
// "yolo", "coco" or "voc") with core/data and imports it. Problems that dropped images are
// returned in `problems` ("file:line: what"); the format is recorded unless options name one.
ImportResult import_dataset_from(Project& project, const std::filesystem::path& source,
                                 const std::string& format, const ImportOptions& options,
                                 std::vector<std::string>* problems = nullptr,
                                 const data::LoadOptions& load_options = {});

std::vector<DatasetInfo> list_datasets(Project& project);
std::optional<DatasetInfo> find_dataset(Project& project, const std::string& name);
// `wanted` when no dataset has that name, else the first free "<wanted>-2", "-3", ...: what the
// studio offers when an import's name is taken.
std::string free_dataset_name(Project& project, const std::string& wanted);
DatasetInfo get_dataset(Project& project, std::int64_t dataset_id);  // InputError when missing
// Removes the dataset from the project with its snapshots that no run names (its image files
// stay where they are).
void delete_dataset(Project& project, std::int64_t dataset_id);

// The dataset with absolute image paths (root = the project folder).
data::DetectionDataset export_dataset(Project& project, std::int64_t dataset_id);
// Writes the dataset as YOLO / COCO / VOC ("yolo", "coco", "voc") under `out` with core/data's
// save_detection_dataset; returns the main file.
std::filesystem::path export_dataset_to(Project& project, std::int64_t dataset_id,
                                        const std::filesystem::path& out,
                                        const std::string& format);

// The dataset as it is in the project now, frozen for a run to train on: YOLO layout under
// <project folder>/<project file stem>.datasets/dataset-<id>-<first 12 of its version hash>/,
// images hard-linked (copied where links fail), labels from the project (so edits made in the
// studio are what trains), the images' tags in tags.json (data/formats/image_tags_file.h; the
// folder name then ends in -t<digest of the tags>, as tags do not change the version). One version
// is written once, atomically, and reused. Returns its data.yaml. A chat dataset's snapshot is its
// records as data.jsonl (one JSON record per line, the text its version hash covers). Other kinds:
// InputError.
std::filesystem::path snapshot_dataset(Project& project, std::int64_t dataset_id);

// Writes the project's labels of a YOLO dataset back into its own label files (the editor's
// Ctrl+S), changed files only, each atomically, and its class names into its data.yaml when
// they changed (data::write_yolo_class_names); a VOC dataset's .xml files get their <object>s
// (data::write_voc_annotation_files). Returns how many files were written. Other
// formats are refused with an InputError that says to export instead.
std::size_t write_labels_to_files(Project& project, std::int64_t dataset_id);

// Stored image paths whose files are missing now (resolved against the project folder).
std::vector<std::string> missing_images(Project& project, std::int64_t dataset_id);

// Chat / instruction records (one JSON value per record), appended in one transaction.
std::int64_t create_chat_dataset(Project& project, const std::string& name,
                                 const std::vector<Json>& records);
std::vector<Json> read_chat_records(Project& project, std::int64_t dataset_id);

// Stable hash of a dataset's content: class names and, per image, its SHA-256, split and boxes
// (file names and locations do not count, so a moved or renamed copy keeps its version).
// Every image must have its sha256 set.
std::string dataset_version_hash(const std::vector<std::string>& class_names,
                                 const std::vector<data::ImageRecord>& images);

}  // namespace crucible::store
