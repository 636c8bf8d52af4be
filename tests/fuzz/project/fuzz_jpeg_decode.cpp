// libFuzzer target for the loader's JPEG decoder (core/data/jpeg_decode.h, libjpeg-turbo called
// directly, with our error handling, pixel limit and scan limit around it). Any bytes must give
// a decoded image of the size reported, a clean "unsupported", or a failure with a reason:
// never a crash, a sanitizer report, a leak of libjpeg's state or a hang.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/data/jpeg_decode.h"
#include "tests/fuzz/project/fuzz_require.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const int scale = 1 << (data[0] % 4);  // the first byte picks 1, 2, 4 or 8
    const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
    std::vector<std::uint8_t> pixels;
    int asked_width = -1, asked_height = -1;
    // 4 MP keeps a fuzzed frame header from asking for gigabytes (the loader's limit is larger).
    const auto r = crucible::data::decode_jpeg_bgr(bytes, scale, 4'000'000, [&](int w, int h) {
        require(w > 0 && h > 0 && static_cast<std::uint64_t>(w) * h <= 4'000'000);
        asked_width = w, asked_height = h;
        pixels.assign(static_cast<std::size_t>(w) * h * 3, 0);
        return pixels.data();
    });
    using Status = crucible::data::JpegDecodeStatus;
    if (r.status == Status::decoded) require(r.width == asked_width && r.height == asked_height);
    if (r.status == Status::failed) require(!r.problem.empty());
    if (r.status == Status::unsupported) require(asked_width == -1);
    return 0;
}
