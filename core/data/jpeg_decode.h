#pragma once
// JPEG decoding straight through libjpeg-turbo, for the loader's hot path. Debian's OpenCV 4.6
// spends about twice libjpeg-turbo's own time in cv::imdecode on the same bytes (2.7 against
// 1.2 ms for a 640 px photo here), and decoding is most of an uncached sample's cost.
//
// Pixels are what cv::imdecode gives for IMREAD_COLOR (the same library, the same accurate
// integer IDCT and fancy upsampling, BGR out; grayscale as three equal channels), before EXIF
// orientation, which image_io applies. Only OpenCV-free code here, so the fuzz target can take it.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace crucible::data {

enum class JpegDecodeStatus {
    decoded,
    unsupported,  // CMYK/YCCK or another colour space libjpeg cannot turn into BGR: use OpenCV
    failed,       // corrupt or hostile data; `problem` says why
};

struct JpegDecodeResult {
    JpegDecodeStatus status = JpegDecodeStatus::failed;
    std::string problem;
    int width = 0, height = 0;  // of the decoded (scaled) image
};

// Decodes `bytes` at 1/scale (1, 2, 4 or 8: libjpeg's DCT scaling) into rows of width * 3 bytes,
// one after the other, at the address `allocate(width, height)` returns. `allocate` may throw;
// the exception passes through with libjpeg's state freed. A frame of more than max_pixels
// (before scaling; libjpeg's own reading of the header, checked before it allocates anything for
// the image) fails, and so do more than kMaxJpegScans scans (a progressive file made to take
// minutes).
JpegDecodeResult decode_jpeg_bgr(
    std::string_view bytes, int scale, std::uint64_t max_pixels,
    const std::function<std::uint8_t*(int width, int height)>& allocate);

inline constexpr int kMaxJpegScans = 256;

}  // namespace crucible::data
