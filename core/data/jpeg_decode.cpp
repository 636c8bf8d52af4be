#include "core/data/jpeg_decode.h"

#include <algorithm>
#include <climits>  // ULONG_MAX
#include <csetjmp>
#include <cstddef>
#include <cstdio>  // jpeglib.h needs FILE and size_t declared first
#include <exception>

#include <jpeglib.h>

#ifndef JCS_EXTENSIONS
#error "libjpeg-turbo is needed (BGR output, JCS_EXT_BGR); this jpeglib.h is another libjpeg"
#endif

namespace crucible::data {
namespace {

// libjpeg reports a fatal error by calling error_exit, which must not return; we leave by
// longjmp to the setjmp in run_decode. The manager comes first so that libjpeg's pointer to it
// is a pointer to the whole.
struct ErrorManager {
    jpeg_error_mgr base;
    std::jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

// Everything a decode touches lives here, in decode_jpeg_bgr's frame: run_decode, which holds
// the setjmp, keeps no object of its own that a longjmp could skip or leave indeterminate.
struct Session {
    jpeg_decompress_struct info;
    ErrorManager errors;
    jpeg_progress_mgr progress;
    std::string_view bytes;
    int scale = 1;
    std::uint64_t max_pixels = 0;
    const std::function<std::uint8_t*(int, int)>* allocate = nullptr;
    std::exception_ptr thrown;
    bool unsupported = false;
    int width = 0, height = 0;
};

[[noreturn]] void leave(j_common_ptr info) {
    std::longjmp(reinterpret_cast<ErrorManager*>(info->err)->jump, 1);
}

[[noreturn]] void on_error(j_common_ptr info) {
    (*info->err->format_message)(info, reinterpret_cast<ErrorManager*>(info->err)->message);
    leave(info);
}

// Warnings (extraneous bytes, a premature end of a segment) decode on, as cv::imdecode does.
void on_message(j_common_ptr, int) {}

void on_progress(j_common_ptr info) {
    const auto* d = reinterpret_cast<j_decompress_ptr>(info);
    if (d->input_scan_number <= kMaxJpegScans) return;
    std::snprintf(reinterpret_cast<ErrorManager*>(info->err)->message, JMSG_LENGTH_MAX,
                  "more than %d scans (a progressive file that would take minutes to decode)",
                  kMaxJpegScans);
    leave(info);
}

// false: libjpeg failed (errors.message says why) or `allocate` threw (thrown).
bool run_decode(Session& s) {
    if (setjmp(s.errors.jump)) return false;
    jpeg_create_decompress(&s.info);
    s.info.progress = &s.progress;
    jpeg_mem_src(&s.info, reinterpret_cast<const unsigned char*>(s.bytes.data()),
                 static_cast<unsigned long>(s.bytes.size()));
    jpeg_read_header(&s.info, TRUE);
    const std::uint64_t pixels_in_frame =
        std::uint64_t{s.info.image_width} * std::uint64_t{s.info.image_height};
    if (pixels_in_frame > s.max_pixels) {
        std::snprintf(s.errors.message, JMSG_LENGTH_MAX,
                      "a frame of %ux%u pixels, over the limit of %llu", s.info.image_width,
                      s.info.image_height, static_cast<unsigned long long>(s.max_pixels));
        return false;
    }
    if (s.info.jpeg_color_space == JCS_CMYK || s.info.jpeg_color_space == JCS_YCCK) {
        s.unsupported = true;
        return true;
    }
    s.info.out_color_space = JCS_EXT_BGR;
    s.info.scale_num = 1;
    s.info.scale_denom = static_cast<unsigned int>(s.scale);
    jpeg_start_decompress(&s.info);
    if (s.info.output_components != 3) {  // sizes are 16-bit in a JPEG: they fit an int
        std::snprintf(s.errors.message, JMSG_LENGTH_MAX, "unexpected output of %d components",
                      s.info.output_components);
        return false;
    }
    s.width = static_cast<int>(s.info.output_width);
    s.height = static_cast<int>(s.info.output_height);
    std::uint8_t* pixels = nullptr;
    try {
        pixels = (*s.allocate)(s.width, s.height);
    } catch (...) {
        s.thrown = std::current_exception();
        return false;
    }
    const std::size_t stride = static_cast<std::size_t>(s.width) * 3;
    constexpr JDIMENSION kRowsPerCall = 16;  // above every rec_outbuf_height libjpeg uses
    JSAMPROW rows[kRowsPerCall];
    while (s.info.output_scanline < s.info.output_height) {
        const JDIMENSION first = s.info.output_scanline;
        const JDIMENSION count = std::min(kRowsPerCall, s.info.output_height - first);
        for (JDIMENSION k = 0; k < count; ++k)
            rows[k] = pixels + (static_cast<std::size_t>(first) + k) * stride;
        jpeg_read_scanlines(&s.info, rows, count);
    }
    jpeg_finish_decompress(&s.info);
    return true;
}

}  // namespace

JpegDecodeResult decode_jpeg_bgr(std::string_view bytes, int scale, std::uint64_t max_pixels,
                                 const std::function<std::uint8_t*(int, int)>& allocate) {
    JpegDecodeResult result;
    if (scale != 1 && scale != 2 && scale != 4 && scale != 8) {
        result.problem = "JPEG scale must be 1, 2, 4 or 8, not " + std::to_string(scale);
        return result;
    }
    if (bytes.size() > ULONG_MAX) {  // unsigned long is 32 bits on Windows
        result.problem = "JPEG too large for libjpeg";
        return result;
    }
    Session s{};
    s.info.err = jpeg_std_error(&s.errors.base);
    s.errors.base.error_exit = on_error;
    s.errors.base.emit_message = on_message;
    s.progress.progress_monitor = on_progress;
    s.bytes = bytes;
    s.scale = scale;
    s.max_pixels = max_pixels;
    s.allocate = &allocate;
    const bool ok = run_decode(s);
    jpeg_destroy_decompress(&s.info);
    if (s.thrown) std::rethrow_exception(s.thrown);
    if (!ok) {
        result.problem = s.errors.message;
        return result;
    }
    result.status = s.unsupported ? JpegDecodeStatus::unsupported : JpegDecodeStatus::decoded;
    result.width = s.width;
    result.height = s.height;
    return result;
}

}  // namespace crucible::data
