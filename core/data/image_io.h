#pragma once
// Image reading for every dataset path (owned by core/data). Reads bytes and decodes them in
// memory (cv::imread fails on non-ASCII paths on Windows): JPEGs through libjpeg-turbo directly
// (jpeg_decode.h), other formats with cv::imdecode. The pixel count from the
// file header is checked against a limit *before* decoding (a PNG claiming 30000x30000 must not
// allocate gigabytes), and truncated JPEGs (no end-of-image marker, which OpenCV decodes
// silently) are detected.
#include <opencv2/core.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace crucible::data {

struct ImageLimits {
    std::uint64_t max_pixels = 100'000'000;  // 100 MP
    std::uint64_t max_file_bytes = 512ull << 20;
};

// width/height are the size cv::imdecode gives: a JPEG whose EXIF orientation is 5..8 (rotated
// by 90 degrees) has them swapped relative to its frame header.
struct ImageHeader {
    std::string format;  // "jpeg", "png", "bmp", "webp", "tiff"
    int width = 0;
    int height = 0;
    int orientation = 1;  // EXIF orientation of a JPEG, 1..8 (1: as stored); 1 for others
};

// Parses width/height from the header bytes of JPEG, PNG, BMP, WebP, TIFF (others: nullopt).
std::optional<ImageHeader> peek_image_header(std::string_view bytes);
// Reads only the start of a file (more only for JPEGs with huge metadata); nullopt when the
// file cannot be opened or its header is not understood.
std::optional<ImageHeader> read_image_header(const std::filesystem::path& path);

// Problems that make a file unusable, or "" when fine: empty file, unknown format, pixel limit,
// truncated JPEG/PNG.
std::string image_bytes_problem(std::string_view bytes, const ImageLimits& limits = {});
// The same for a file (missing, a directory, too big, or any problem above); "" when fine.
std::string image_file_problem(const std::filesystem::path& path, const ImageLimits& limits = {});

// Decodes to 8-bit BGR. Throws InputError naming `where` on any problem above or a failed decode.
// With min_long_side > 0, a JPEG whose long side is at least twice that is decoded at the
// smallest of 1/2, 1/4 and 1/8 scale (libjpeg's DCT scaling, several times faster than a full
// decode and then a resize) whose long side is still >= min_long_side; other formats and smaller
// JPEGs decode at full size.
cv::Mat decode_image(std::string_view bytes, const std::string& where,
                     const ImageLimits& limits = {}, int min_long_side = 0);
cv::Mat read_image(const std::filesystem::path& path, const ImageLimits& limits = {},
                   int min_long_side = 0);

// The JPEG scale decode_image uses: 1, 2, 4 or 8 (the image is decoded at 1/scale).
int jpeg_decode_scale(int width, int height, int min_long_side);

// Encodes (".jpg", ".png") and writes atomically; works with non-ASCII paths.
void write_image(const std::filesystem::path& path, const cv::Mat& image, int jpeg_quality = 95);

}  // namespace crucible::data
