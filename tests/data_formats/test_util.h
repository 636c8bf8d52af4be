#pragma once
// Shared helpers of the data_formats tests: a temporary folder per test and small images made
// with OpenCV.
#include <opencv2/core.hpp>

#include <filesystem>
#include <string>
#include <string_view>

#include "tests/support/temp_dir.h"

namespace crucible::data::test {

// The tests' one temporary folder (tests/support/temp_dir.h).
using TempDir = test_support::TempDir;

// An image with some structure (so JPEG has real scan data).
cv::Mat make_image(int width, int height, int seed = 0);
// Encoded bytes of make_image (".jpg", ".png", ".bmp").
std::string encoded(const std::string& ext, int width, int height, int seed = 0);
void write_bytes(const std::filesystem::path& path, std::string_view bytes);
std::string read_text(const std::filesystem::path& path);

}  // namespace crucible::data::test

#include <vector>

#include "core/data/detection_types.h"

namespace crucible::data::test {

struct YoloImage {
    std::string split;  // "train" / "val"
    std::string name;   // UTF-8 file name, e.g. "a.jpg"
    int width = 64, height = 48;
    std::string labels;  // label file text; "-" = no label file
};

// Writes <dir>/data.yaml, images/<split>/<name>, labels/<split>/<stem>.txt.
std::filesystem::path write_yolo_dataset(
    const std::filesystem::path& dir, const std::vector<YoloImage>& images,
    const std::string& names_yaml = "names: [cat, dog, bird]\n");

}  // namespace crucible::data::test
