#include "core/data/image_io.h"

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <string_view>
#include <vector>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "tests/data_formats/test_util.h"

namespace crucible::data {
namespace {

using test::encoded;
using test::TempDir;

std::string be32(std::uint32_t v) {
    return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}

// A PNG whose IHDR claims width x height, followed by a tiny IDAT and IEND (CRCs are not
// checked by the header peek; OpenCV must never be asked to decode it).
std::string fake_png(std::uint32_t width, std::uint32_t height) {
    std::string b("\x89PNG\r\n\x1a\n", 8);
    b += be32(13) + "IHDR" + be32(width) + be32(height) + std::string("\x08\x02\x00\x00\x00", 5) +
         be32(0);
    b += be32(2) + "IDAT" + std::string("\x78\x9c", 2) + be32(0);
    b += be32(0) + "IEND" + be32(0xAE426082);
    return b;
}

TEST(ImageIo, PeeksJpegPngBmpSizes) {
    for (const std::string ext : {".jpg", ".png", ".bmp"}) {
        const auto bytes = encoded(ext, 37, 23);
        const auto header = peek_image_header(bytes);
        ASSERT_TRUE(header) << ext;
        EXPECT_EQ(header->width, 37) << ext;
        EXPECT_EQ(header->height, 23) << ext;
        EXPECT_EQ(image_bytes_problem(bytes), "") << ext;
        const cv::Mat image = decode_image(bytes, "x" + ext);
        EXPECT_EQ(image.cols, 37);
        EXPECT_EQ(image.rows, 23);
        EXPECT_EQ(image.type(), CV_8UC3);
    }
    EXPECT_EQ(peek_image_header(encoded(".jpg", 37, 23))->format, "jpeg");
    EXPECT_EQ(peek_image_header(encoded(".png", 37, 23))->format, "png");
    EXPECT_EQ(peek_image_header(encoded(".bmp", 37, 23))->format, "bmp");
    EXPECT_FALSE(peek_image_header("GIF89a......"));
    EXPECT_FALSE(peek_image_header(""));
}

TEST(ImageIo, RejectsHugePngBeforeDecoding) {
    const auto bytes = fake_png(30000, 30000);
    const auto header = peek_image_header(bytes);
    ASSERT_TRUE(header);
    EXPECT_EQ(header->width, 30000);
    const auto problem = image_bytes_problem(bytes);
    EXPECT_NE(problem.find("30000x30000"), std::string::npos) << problem;
    EXPECT_NE(problem.find("over the limit"), std::string::npos) << problem;
    try {
        decode_image(bytes, "big.png");
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_EQ(e.where(), "big.png");
    }
    // A smaller limit rejects a real image too; a larger one lets it through.
    const auto real = encoded(".png", 64, 64);
    EXPECT_NE(image_bytes_problem(real, {.max_pixels = 64 * 64 - 1}), "");
    EXPECT_EQ(image_bytes_problem(real, {.max_pixels = 64 * 64}), "");
}

TEST(ImageIo, DetectsTruncatedJpegAndPng) {
    const auto jpeg = encoded(".jpg", 120, 80);
    ASSERT_EQ(image_bytes_problem(jpeg), "");
    // OpenCV decodes these silently; the checks must not.
    for (std::size_t keep : {jpeg.size() - 2, jpeg.size() * 3 / 4, jpeg.size() / 2}) {
        const auto problem = image_bytes_problem(jpeg.substr(0, keep));
        EXPECT_NE(problem.find("truncated JPEG"), std::string::npos) << keep << ": " << problem;
    }
    EXPECT_NE(image_bytes_problem(jpeg.substr(0, 40)), "");
    // Trailing bytes after the end-of-image marker are tolerated.
    EXPECT_EQ(image_bytes_problem(jpeg + std::string(100, '\0')), "");

    const auto png = encoded(".png", 120, 80);
    ASSERT_EQ(image_bytes_problem(png), "");
    for (std::size_t keep : {png.size() - 1, png.size() - 12, png.size() / 2, std::size_t{30}}) {
        const auto problem = image_bytes_problem(png.substr(0, keep));
        EXPECT_NE(problem.find("truncated PNG"), std::string::npos) << keep << ": " << problem;
    }
    EXPECT_NE(image_bytes_problem(png.substr(0, 16)).find("PNG"), std::string::npos);
}

TEST(ImageIo, RejectsEmptyAndUnknownBytes) {
    EXPECT_NE(image_bytes_problem("").find("empty"), std::string::npos);
    EXPECT_NE(image_bytes_problem("hello world, not an image").find("unknown"), std::string::npos);
    EXPECT_THROW(decode_image("", "a.jpg"), InputError);
    EXPECT_THROW(decode_image("\xFF\xD8\xFF", "a.jpg"), InputError);
    // Header fine, data garbage: decode fails cleanly.
    EXPECT_THROW(decode_image(fake_png(8, 8), "a.png"), InputError);
}

// A 60 x 20 JPEG with an APP1 "Exif" block (little-endian TIFF, one IFD entry) giving
// orientation 6 (90 degrees).
std::string rotated_jpeg() {
    const auto jpeg = encoded(".jpg", 60, 20);
    std::string tiff("II*\0\x08\0\0\0", 8);
    tiff += std::string("\x01\x00", 2) +
            std::string("\x12\x01\x03\x00\x01\x00\x00\x00\x06\x00\x00\x00", 12) +
            std::string(4, '\0');
    const std::string payload = std::string("Exif\0\0", 6) + tiff;
    const std::size_t length = payload.size() + 2;
    const std::string app1 =
        std::string("\xFF\xE1", 2) + char(length >> 8) + char(length & 0xFF) + payload;
    return jpeg.substr(0, 2) + app1 + jpeg.substr(2);
}

TEST(ImageIo, ExifOrientationSwapsSizeLikeDecode) {
    const std::string rotated = rotated_jpeg();
    const auto header = peek_image_header(rotated);
    ASSERT_TRUE(header);
    const cv::Mat image = decode_image(rotated, "r.jpg");
    EXPECT_EQ(header->width, image.cols);
    EXPECT_EQ(header->height, image.rows);
    EXPECT_EQ(header->width, 20);
}

TEST(ImageIo, ExifRotatedJpegDecodesReducedWithItsOrientation) {
    const cv::Mat image = decode_image(rotated_jpeg(), "r.jpg", {}, 30);
    EXPECT_EQ(image.cols, 10);
    EXPECT_EQ(image.rows, 30);
}

TEST(ImageIo, JpegDecodeScaleIsTheSmallestAboveTheTarget) {
    struct Case {
        int width, height, min_long_side, scale;
    };
    const Case cases[] = {
        {1280, 960, 640, 2}, {1279, 960, 640, 2},  // ceil(1279 / 2) = 640
        {1278, 960, 640, 1}, {960, 1278, 640, 1},  {2560, 1440, 640, 4},
        {100, 3000, 640, 4}, {5120, 3840, 640, 8}, {20000, 10, 640, 8},  // never below 1/8
        {640, 480, 640, 1},  {1280, 960, 0, 1},    {1280, 960, -5, 1}};
    for (const Case& c : cases)
        EXPECT_EQ(jpeg_decode_scale(c.width, c.height, c.min_long_side), c.scale)
            << c.width << "x" << c.height << " for " << c.min_long_side;
}

TEST(ImageIo, LargeJpegsDecodeReducedAndCloseToAFullDecodeAndResize) {
    // A smooth picture (a DCT-scaled decode is an area average, as INTER_AREA is).
    cv::Mat picture(960, 1280, CV_8UC3);
    for (int y = 0; y < picture.rows; ++y)
        for (int x = 0; x < picture.cols; ++x)
            picture.at<cv::Vec3b>(y, x) =
                cv::Vec3b(static_cast<uchar>(x / 5), static_cast<uchar>(y / 4),
                          static_cast<uchar>((x + y) / 9));
    std::vector<uchar> jpeg, png;
    cv::imencode(".jpg", picture, jpeg, {cv::IMWRITE_JPEG_QUALITY, 95});
    cv::imencode(".png", picture, png);
    const std::string_view jpeg_bytes(reinterpret_cast<const char*>(jpeg.data()), jpeg.size());
    const cv::Mat reduced = decode_image(jpeg_bytes, "big.jpg", {}, 640);
    ASSERT_EQ(reduced.size(), cv::Size(640, 480));
    cv::Mat full_then_resized;
    cv::resize(decode_image(jpeg_bytes, "big.jpg"), full_then_resized, reduced.size(), 0, 0,
               cv::INTER_AREA);
    EXPECT_LT(cv::norm(reduced, full_then_resized, cv::NORM_L1) / double(reduced.total() * 3), 2.0);
    EXPECT_EQ(decode_image(jpeg_bytes, "big.jpg", {}, 641).size(), cv::Size(1280, 960));
    // Other formats always decode at full size.
    const std::string_view png_bytes(reinterpret_cast<const char*>(png.data()), png.size());
    EXPECT_EQ(decode_image(png_bytes, "big.png", {}, 640).size(), cv::Size(1280, 960));
}

TEST(ImageIo, HeaderAfterLargeMetadataIsFound) {
    // Three 60 KB APP2 segments before the frame header: past the first 64 KiB read.
    const auto jpeg = encoded(".jpg", 41, 29);
    std::string app;
    for (int k = 0; k < 3; ++k) {
        const std::size_t length = 60000;
        app += std::string("\xFF\xE2", 2) + char(length >> 8) + char(length & 0xFF) +
               std::string(length - 2, 'm');
    }
    const std::string big = jpeg.substr(0, 2) + app + jpeg.substr(2);
    EXPECT_EQ(image_bytes_problem(big), "");
    TempDir dir;
    const auto path = dir / "big-exif.jpg";
    test::write_bytes(path, big);
    const auto header = read_image_header(path);
    ASSERT_TRUE(header);
    EXPECT_EQ(header->width, 41);
    EXPECT_EQ(header->height, 29);
    EXPECT_EQ(read_image(path).cols, 41);
}

TEST(ImageIo, WritesAndReadsNonAsciiPaths) {
    TempDir dir;
    const auto path = dir / "图像/测试 ü.png";
    write_image(path, test::make_image(33, 17));
    const cv::Mat image = read_image(path);
    EXPECT_EQ(image.cols, 33);
    EXPECT_EQ(image.rows, 17);
    const auto header = read_image_header(path);
    ASSERT_TRUE(header);
    EXPECT_EQ(header->height, 17);
    EXPECT_EQ(image_file_problem(path), "");
    const auto jpg = dir / "图像/b.JPG";
    write_image(jpg, test::make_image(33, 17), 80);
    EXPECT_EQ(peek_image_header(read_file_bytes(jpg))->format, "jpeg");
}

TEST(ImageIo, FileProblems) {
    TempDir dir;
    EXPECT_NE(image_file_problem(dir / "missing.jpg").find("missing"), std::string::npos);
    std::filesystem::create_directories(dir / "folder.jpg");
    EXPECT_NE(image_file_problem(dir / "folder.jpg").find("directory"), std::string::npos);
    test::write_bytes(dir / "empty.jpg", "");
    EXPECT_NE(image_file_problem(dir / "empty.jpg").find("empty"), std::string::npos);
    EXPECT_THROW(read_image(dir / "empty.jpg"), InputError);
    EXPECT_THROW(read_image(dir / "missing.jpg"), InputError);
    test::write_bytes(dir / "big.png", fake_png(30000, 30000));
    EXPECT_NE(image_file_problem(dir / "big.png").find("over the limit"), std::string::npos);
    EXPECT_NE(image_file_problem(dir / "big.png", {.max_pixels = 1ull << 40, .max_file_bytes = 10})
                  .find("bytes"),
              std::string::npos);
}

}  // namespace
}  // namespace crucible::data
