// decode_image's JPEG path (libjpeg-turbo called directly, core/data/jpeg_decode.h) against
// cv::imdecode, which it replaces on the loader's hot path: the same pixels for every kind of
// JPEG, scale and EXIF orientation, OpenCV's own decode for CMYK, and hostile files refused with
// a message instead of a crash or a hang.
#include "core/data/jpeg_decode.h"

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <jpeglib.h>

#include "core/base/error.h"
#include "core/data/image_io.h"

namespace crucible::data {
namespace {

constexpr std::uint64_t kPixels = 100'000'000;

// A photo-like picture: gradients, edges and noise, so every DCT coefficient matters.
cv::Mat picture(int width, int height, int seed) {
    cv::Mat image(height, width, CV_8UC3);
    cv::randu(image, cv::Scalar::all(0), cv::Scalar::all(60));
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            cv::Vec3b& p = image.at<cv::Vec3b>(y, x);
            p[0] = cv::saturate_cast<uchar>(p[0] + x * 190 / width);
            p[1] = cv::saturate_cast<uchar>(p[1] + y * 190 / height);
            p[2] = cv::saturate_cast<uchar>(p[2] + ((x / 7 + y / 5 + seed) % 2) * 150);
        }
    return image;
}

std::string encode(const cv::Mat& image, std::vector<int> params) {
    std::vector<uchar> bytes;
    EXPECT_TRUE(cv::imencode(".jpg", image, bytes, params));
    return {bytes.begin(), bytes.end()};
}

cv::Mat opencv_decode(const std::string& bytes, int flags) {
    return cv::imdecode(
        cv::Mat(1, static_cast<int>(bytes.size()), CV_8U, const_cast<char*>(bytes.data())), flags);
}

void expect_same_pixels(const cv::Mat& ours, const cv::Mat& theirs, const std::string& what) {
    ASSERT_FALSE(theirs.empty()) << what;
    ASSERT_EQ(ours.size(), theirs.size()) << what;
    ASSERT_EQ(ours.type(), theirs.type()) << what;
    EXPECT_EQ(cv::norm(ours, theirs, cv::NORM_INF), 0) << what;
}

// An APP1 "Exif" segment holding only an orientation, in either byte order.
std::string with_orientation(const std::string& jpeg, int orientation, bool big_endian) {
    std::string tiff;
    const auto u16 = [&](int v) {
        const char hi = static_cast<char>(v >> 8), lo = static_cast<char>(v & 0xFF);
        tiff += big_endian ? std::string{hi, lo} : std::string{lo, hi};
    };
    const auto u32 = [&](int v) {
        u16(big_endian ? v >> 16 : v & 0xFFFF);
        u16(big_endian ? v & 0xFFFF : v >> 16);
    };
    tiff += big_endian ? "MM" : "II";
    u16(42), u32(8);                   // the first IFD follows the header
    u16(1);                            // one entry:
    u16(0x0112), u16(3), u32(1);       // orientation, SHORT, one value
    u16(orientation), u16(0), u32(0);  // the value, padding; no next IFD
    const std::string payload = std::string("Exif\0\0", 6) + tiff;
    const std::size_t length = payload.size() + 2;
    return jpeg.substr(0, 2) + "\xFF\xE1" + static_cast<char>(length >> 8) +
           static_cast<char>(length & 0xFF) + payload + jpeg.substr(2);
}

// Encodes through libjpeg what cv::imencode (OpenCV 4.6) cannot write: other chroma
// subsamplings (luma sampled h x v against chroma) and CMYK (stored as YCCK).
std::string libjpeg_encode(const cv::Mat& image, int h, int v) {
    const bool cmyk = image.channels() == 4;
    jpeg_compress_struct info{};
    jpeg_error_mgr errors{};
    info.err = jpeg_std_error(&errors);
    jpeg_create_compress(&info);
    unsigned char* out = nullptr;
    unsigned long size = 0;
    jpeg_mem_dest(&info, &out, &size);
    info.image_width = static_cast<JDIMENSION>(image.cols);
    info.image_height = static_cast<JDIMENSION>(image.rows);
    info.input_components = image.channels();
    info.in_color_space = cmyk ? JCS_CMYK : JCS_EXT_BGR;
    jpeg_set_defaults(&info);
    if (cmyk) jpeg_set_colorspace(&info, JCS_YCCK);
    info.comp_info[0].h_samp_factor = h;
    info.comp_info[0].v_samp_factor = v;
    jpeg_start_compress(&info, TRUE);
    while (info.next_scanline < info.image_height) {
        JSAMPROW row = const_cast<JSAMPROW>(image.ptr(static_cast<int>(info.next_scanline)));
        jpeg_write_scanlines(&info, &row, 1);
    }
    jpeg_finish_compress(&info);
    jpeg_destroy_compress(&info);
    std::string bytes(reinterpret_cast<char*>(out), size);
    std::free(out);
    return bytes;
}

TEST(JpegDecode, EveryKindOfJpegAtEveryScaleGivesOpenCvsPixels) {
    const cv::Mat photo = picture(203, 131, 1);  // odd sizes: partial MCUs on both edges
    cv::Mat grey;
    cv::cvtColor(photo, grey, cv::COLOR_BGR2GRAY);
    struct Kind {
        const char* name;
        std::string bytes;
    };
    const Kind kinds[] = {
        {"baseline 4:2:0", encode(photo, {cv::IMWRITE_JPEG_QUALITY, 90})},
        {"4:4:4", libjpeg_encode(photo, 1, 1)},
        {"4:2:2", libjpeg_encode(photo, 2, 1)},
        {"4:4:0", libjpeg_encode(photo, 1, 2)},
        {"progressive", encode(photo, {cv::IMWRITE_JPEG_PROGRESSIVE, 1})},
        {"optimized Huffman", encode(photo, {cv::IMWRITE_JPEG_OPTIMIZE, 1})},
        {"restart markers", encode(photo, {cv::IMWRITE_JPEG_RST_INTERVAL, 3})},
        {"greyscale", encode(grey, {cv::IMWRITE_JPEG_QUALITY, 85})},
        {"one pixel", encode(picture(1, 1, 2), {})},
    };
    const std::pair<int, int> scales[] = {{1, cv::IMREAD_COLOR},
                                          {2, cv::IMREAD_REDUCED_COLOR_2},
                                          {4, cv::IMREAD_REDUCED_COLOR_4},
                                          {8, cv::IMREAD_REDUCED_COLOR_8}};
    for (const Kind& k : kinds)
        for (const auto& [scale, flags] : scales) {
            cv::Mat ours;
            const JpegDecodeResult r = decode_jpeg_bgr(k.bytes, scale, kPixels, [&](int w, int h) {
                ours.create(h, w, CV_8UC3);
                return ours.data;
            });
            ASSERT_EQ(r.status, JpegDecodeStatus::decoded) << k.name << ": " << r.problem;
            EXPECT_EQ(r.width, ours.cols);
            expect_same_pixels(ours, opencv_decode(k.bytes, flags),
                               std::string(k.name) + " at 1/" + std::to_string(scale));
        }
    // decode_image picks the scale from the size asked for.
    const std::string& baseline = kinds[0].bytes;
    expect_same_pixels(decode_image(baseline, "p.jpg", {}, 100),
                       opencv_decode(baseline, cv::IMREAD_REDUCED_COLOR_2), "decode_image, 100");
}

TEST(JpegDecode, ExifOrientationsTurnTheImageAsOpenCvDoes) {
    const std::string plain = encode(picture(48, 24, 3), {cv::IMWRITE_JPEG_QUALITY, 95});
    for (bool big_endian : {false, true})
        for (int orientation = 1; orientation <= 8; ++orientation) {
            const std::string bytes = with_orientation(plain, orientation, big_endian);
            const std::string what =
                "orientation " + std::to_string(orientation) + (big_endian ? " (MM)" : " (II)");
            expect_same_pixels(decode_image(bytes, "o.jpg"), opencv_decode(bytes, cv::IMREAD_COLOR),
                               what);
            expect_same_pixels(decode_image(bytes, "o.jpg", {}, 20),
                               opencv_decode(bytes, cv::IMREAD_REDUCED_COLOR_2), what + ", 1/2");
            const auto header = peek_image_header(bytes);
            ASSERT_TRUE(header);
            EXPECT_EQ(header->orientation, orientation) << what;
        }
}

TEST(JpegDecode, CmykIsLeftToOpenCv) {
    cv::Mat cmyk(21, 37, CV_8UC4);
    cv::randu(cmyk, cv::Scalar::all(0), cv::Scalar::all(256));
    const std::string bytes = libjpeg_encode(cmyk, 2, 2);
    cv::Mat ours;
    const JpegDecodeResult r = decode_jpeg_bgr(bytes, 1, kPixels, [&](int w, int h) {
        ours.create(h, w, CV_8UC3);
        return ours.data;
    });
    EXPECT_EQ(r.status, JpegDecodeStatus::unsupported);
    EXPECT_TRUE(ours.empty());  // nothing was allocated
    expect_same_pixels(decode_image(bytes, "cmyk.jpg"), opencv_decode(bytes, cv::IMREAD_COLOR),
                       "CMYK");
}

TEST(JpegDecode, AnAllocationThatThrowsPassesThroughWithNothingLeftBehind) {
    const std::string bytes = encode(picture(64, 64, 4), {});
    EXPECT_THROW(decode_jpeg_bgr(bytes, 1, kPixels,
                                 [](int, int) -> std::uint8_t* {
                                     throw InputError("x.jpg", "over the budget");
                                 }),
                 InputError);
    // The decoder is whole afterwards (a leak would show under the sanitizers of the fuzz build).
    cv::Mat ours;
    EXPECT_EQ(decode_jpeg_bgr(bytes, 1, kPixels,
                              [&](int w, int h) {
                                  ours.create(h, w, CV_8UC3);
                                  return ours.data;
                              })
                  .status,
              JpegDecodeStatus::decoded);
}

// Replaces the bytes at `at` (a JPEG's structure is in its first bytes).
std::string patched(std::string bytes, std::size_t at, std::string_view with) {
    bytes.replace(at, with.size(), with);
    return bytes;
}

std::size_t find_marker(const std::string& bytes, unsigned char marker, std::size_t from = 0) {
    for (std::size_t i = from; i + 1 < bytes.size(); ++i)
        if (static_cast<unsigned char>(bytes[i]) == 0xFF &&
            static_cast<unsigned char>(bytes[i + 1]) == marker)
            return i;
    return std::string::npos;
}

TEST(JpegDecode, HostileFilesAreRefusedNamingTheFileAndWhy) {
    const std::string good = encode(picture(80, 60, 5), {cv::IMWRITE_JPEG_QUALITY, 90});
    const std::string progressive = encode(picture(80, 60, 6), {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
    const std::size_t sof = find_marker(good, 0xC0), dht = find_marker(good, 0xC4);
    const std::size_t sos = find_marker(good, 0xDA);
    ASSERT_NE(sof, std::string::npos);
    ASSERT_NE(dht, std::string::npos);
    ASSERT_NE(sos, std::string::npos);
    // The progressive file's last scan repeated 300 times: libjpeg only warns about a repeated
    // refinement, so without a limit each scan costs a pass over the whole image.
    const std::size_t last_scan = [&] {
        std::size_t at = find_marker(progressive, 0xDA), next = at;
        while ((next = find_marker(progressive, 0xDA, at + 2)) != std::string::npos)
            at = next;
        return at;
    }();
    std::string many_scans = progressive.substr(0, last_scan);
    const std::string scan = progressive.substr(last_scan, progressive.size() - 2 - last_scan);
    for (int k = 0; k < 300; ++k)
        many_scans += scan;
    many_scans += "\xFF\xD9";

    // message: what the refusal says after the file's name; "" for a damaged scan that
    // libjpeg only warns about and pads (as cv::imdecode does), decoded at the frame's size.
    struct Case {
        const char* name;
        std::string bytes;
        const char* message;
    };
    const std::string end = "\xFF\xD9";
    const Case cases[] = {
        {"cut after the frame header", good.substr(0, sos) + end, "no start-of-scan marker"},
        {"scan data cut to half", good.substr(0, (sos + good.size()) / 2) + end, ""},
        {"zero width", patched(good, sof + 7, std::string("\0\0", 2)), "empty size 0x60"},
        {"a Huffman table with a bogus count", patched(good, dht + 5, "\xFF\xFF\xFF\xFF"),
         "cannot decode JPEG: Bogus Huffman table definition"},
        {"17 components", patched(good, sof + 9, "\x11"),
         "cannot decode JPEG: Bogus marker length"},
        {"scan before any frame", good.substr(0, 2) + good.substr(sos), "no frame header"},
        {"every scan byte FF", good.substr(0, sos + 14) + std::string(4000, '\xFF') + end, ""},
        {"300 scans", many_scans, "cannot decode JPEG: more than 256 scans"},
        {"Chinese and non-UTF-8 bytes as data",
         good.substr(0, sos + 14) + "图像\xC3\x28\xFE\xFF\x00" + end, ""},
    };
    for (const Case& c : cases) {
        const std::string expected = c.message;
        try {
            const cv::Mat image = decode_image(c.bytes, "图/o.jpg");
            EXPECT_EQ(expected, "") << c.name << ": decoded, not refused";
            EXPECT_EQ(image.size(), cv::Size(80, 60)) << c.name;
        } catch (const InputError& e) {
            EXPECT_EQ(std::string(e.what()).rfind("图/o.jpg: ", 0), 0u)
                << c.name << ": " << e.what();
            EXPECT_NE(expected, "") << c.name << ": refused: " << e.what();
            EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
                << c.name << ": " << e.what();
        }
    }
}

TEST(JpegDecode, ScalesOtherThanThePowersOfTwoAreRefused) {
    const std::string bytes = encode(picture(16, 16, 7), {});
    for (int scale : {0, 3, 16, -1}) {
        const JpegDecodeResult r = decode_jpeg_bgr(
            bytes, scale, kPixels, [](int, int) -> std::uint8_t* { return nullptr; });
        EXPECT_EQ(r.status, JpegDecodeStatus::failed) << scale;
        EXPECT_NE(r.problem.find("scale"), std::string::npos) << r.problem;
    }
}

// The decoder checks the frame's size as libjpeg reads it, before anything is allocated for the
// image: image_io's own header check comes first, but the two parsers must not be trusted to agree.
TEST(JpegDecode, AFrameOverThePixelLimitIsRefusedBeforeAnyAllocation) {
    const std::string bytes = encode(picture(80, 60, 8), {});
    bool allocated = false;
    const auto allocate = [&](int, int) -> std::uint8_t* {
        allocated = true;
        return nullptr;
    };
    const JpegDecodeResult r = decode_jpeg_bgr(bytes, 8, 80 * 60 - 1, allocate);
    EXPECT_EQ(r.status, JpegDecodeStatus::failed);
    EXPECT_NE(r.problem.find("80x60 pixels, over the limit of 4799"), std::string::npos)
        << r.problem;
    EXPECT_FALSE(allocated);
    cv::Mat ours;
    EXPECT_EQ(decode_jpeg_bgr(bytes, 8, 80 * 60,
                              [&](int w, int h) {
                                  ours.create(h, w, CV_8UC3);
                                  return ours.data;
                              })
                  .status,
              JpegDecodeStatus::decoded);
    EXPECT_EQ(ours.size(), cv::Size(10, 8));
}

}  // namespace
}  // namespace crucible::data
