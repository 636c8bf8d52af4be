#pragma once
// Small pieces shared by the dataset format readers and writers.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/data/dataset_io.h"
#include "core/data/detection_types.h"
#include "core/data/formats/path_text.h"

namespace crucible::data::detail {

// True when the file name is valid UTF-8 (names that are not cannot go into JSON or the store).
bool has_utf8_name(const std::filesystem::path& path);
// jpg, jpeg, png, bmp, webp, tif, tiff (any case).
bool is_image_file_name(const std::filesystem::path& path);
// Every image under `folder` (recursive), sorted.
std::vector<std::filesystem::path> list_images(const std::filesystem::path& folder);
// Absolute path of a record's image.
std::filesystem::path image_path(const DetectionDataset& dataset, const ImageRecord& record);
// Checks an image as LoadOptions ask (header sizes, full check); "" when fine. Fills width/height.
std::string inspect_image(ImageRecord& record, const std::filesystem::path& file,
                          const LoadOptions& options);
// Width/height of a record, peeked from the header when not known yet; InputError if unreadable.
std::pair<int, int> image_size(const DetectionDataset& dataset, const ImageRecord& record);
// Places images under `folder` (copies or hard links), choosing unique stems. Returns the
// destination of each image (same order as `dataset.images`).
std::vector<std::filesystem::path> copy_images(const DetectionDataset& dataset,
                                               const std::vector<std::filesystem::path>& folders,
                                               ImageFiles files);
// Split name of a record, "train" when empty.
std::string split_of(const ImageRecord& record);
// Reads a text file with a size limit; nullopt (and a problem) when it cannot be read.
std::optional<std::string> read_text_file(const std::filesystem::path& path,
                                          std::uint64_t max_bytes, const std::string& where,
                                          std::vector<DatasetProblem>& problems);

}  // namespace crucible::data::detail

namespace crucible::data::detail {
// Plain write (no fsync: datasets have many small files); Error naming the file on failure.
void write_text_file(const std::filesystem::path& path, std::string_view text);
}  // namespace crucible::data::detail
