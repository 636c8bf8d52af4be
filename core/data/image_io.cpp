#include "core/data/image_io.h"

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <vector>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/jpeg_decode.h"

namespace crucible::data {
namespace {

using u8 = unsigned char;

std::uint32_t be16(std::string_view b, std::size_t at) {
    return (std::uint32_t(u8(b[at])) << 8) | u8(b[at + 1]);
}
std::uint32_t be32(std::string_view b, std::size_t at) {
    return (be16(b, at) << 16) | be16(b, at + 2);
}
std::uint32_t le16(std::string_view b, std::size_t at) {
    return (std::uint32_t(u8(b[at + 1])) << 8) | u8(b[at]);
}
std::uint32_t le32(std::string_view b, std::size_t at) {
    return (le16(b, at + 2) << 16) | le16(b, at);
}
std::uint32_t le24(std::string_view b, std::size_t at) {
    return (std::uint32_t(u8(b[at + 2])) << 16) | le16(b, at);
}

bool starts_with(std::string_view b, std::string_view prefix) {
    return b.size() >= prefix.size() && b.substr(0, prefix.size()) == prefix;
}

const std::string_view kPngSignature("\x89PNG\r\n\x1a\n", 8);

// EXIF orientation (tag 0x0112) from a TIFF block (the payload of a JPEG APP1 "Exif" segment);
// 1 when absent or unreadable.
int tiff_orientation(std::string_view t) {
    if (t.size() < 8) return 1;
    const bool little = t[0] == 'I' && t[1] == 'I';
    if (!little && !(t[0] == 'M' && t[1] == 'M')) return 1;
    auto r16 = [&](std::size_t at) { return little ? le16(t, at) : be16(t, at); };
    auto r32 = [&](std::size_t at) { return little ? le32(t, at) : be32(t, at); };
    const std::size_t ifd = r32(4);
    if (ifd + 2 > t.size()) return 1;
    const std::size_t count = r16(ifd);
    for (std::size_t i = 0; i < count; ++i) {
        const std::size_t e = ifd + 2 + i * 12;
        if (e + 12 > t.size()) return 1;
        if (r16(e) == 0x0112) {
            const int v = int(r16(e + 8));
            return v >= 1 && v <= 8 ? v : 1;
        }
    }
    return 1;
}

// Walks the JPEG marker segments up to the start of scan. Returns the header (width/height
// already swapped for EXIF orientations 5..8, as cv::imdecode applies them) and where the scan
// data begins (for the end-of-image search).
std::optional<ImageHeader> peek_jpeg(std::string_view b, std::size_t* scan_start) {
    std::size_t i = 2;
    int orientation = 1;
    std::optional<ImageHeader> header;
    while (i + 4 <= b.size()) {
        if (u8(b[i]) != 0xFF) return std::nullopt;  // segments must follow each other
        while (i < b.size() && u8(b[i]) == 0xFF)
            ++i;  // fill bytes
        if (i >= b.size()) break;
        const unsigned marker = u8(b[i]);
        ++i;
        if (marker == 0xD8 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;
        if (marker == 0xD9) break;
        if (i + 2 > b.size()) break;
        const std::size_t length = be16(b, i);
        if (length < 2) return std::nullopt;
        const std::size_t body = i + 2;
        const std::size_t end = i + length;
        if (marker == 0xE1 && end <= b.size() && length >= 8 &&
            b.substr(body, 6) == std::string_view("Exif\0\0", 6))
            orientation = tiff_orientation(b.substr(body + 6, length - 8));
        const bool sof =
            marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
        if (sof && !header) {
            if (body + 5 > b.size()) return std::nullopt;
            ImageHeader h;
            h.format = "jpeg";
            h.height = int(be16(b, body + 1));
            h.width = int(be16(b, body + 3));
            header = h;
        }
        if (marker == 0xDA) {
            if (scan_start) *scan_start = std::min(end, b.size());
            break;
        }
        i = end;
    }
    if (header) {
        header->orientation = orientation;
        if (orientation >= 5) std::swap(header->width, header->height);
    }
    return header;
}

std::optional<ImageHeader> peek_webp(std::string_view b) {
    if (b.size() < 30 || b.substr(8, 4) != "WEBP") return std::nullopt;
    const auto chunk = b.substr(12, 4);
    ImageHeader h;
    h.format = "webp";
    if (chunk == "VP8 ") {
        h.width = int(le16(b, 26) & 0x3FFF);
        h.height = int(le16(b, 28) & 0x3FFF);
    } else if (chunk == "VP8L") {
        const std::uint32_t bits = le32(b, 21);
        h.width = int((bits & 0x3FFF) + 1);
        h.height = int(((bits >> 14) & 0x3FFF) + 1);
    } else if (chunk == "VP8X") {
        h.width = int(le24(b, 24) + 1);
        h.height = int(le24(b, 27) + 1);
    } else {
        return std::nullopt;
    }
    return h;
}

std::optional<ImageHeader> peek_tiff(std::string_view b) {
    if (b.size() < 8) return std::nullopt;
    const bool little = b[0] == 'I';
    auto r16 = [&](std::size_t at) { return little ? le16(b, at) : be16(b, at); };
    auto r32 = [&](std::size_t at) { return little ? le32(b, at) : be32(b, at); };
    const std::size_t ifd = r32(4);
    if (ifd + 2 > b.size()) return std::nullopt;
    const std::size_t count = r16(ifd);
    ImageHeader h;
    h.format = "tiff";
    for (std::size_t k = 0; k < count; ++k) {
        const std::size_t e = ifd + 2 + k * 12;
        if (e + 12 > b.size()) return std::nullopt;
        const unsigned tag = r16(e), type = r16(e + 2);
        if (tag != 256 && tag != 257) continue;
        const std::uint32_t value = type == 3 ? r16(e + 8) : r32(e + 8);
        (tag == 256 ? h.width : h.height) = int(std::min<std::uint32_t>(value, 0x7FFFFFFF));
    }
    if (h.width == 0 || h.height == 0) return std::nullopt;
    return h;
}

// "" when the PNG chunk chain is complete up to IEND, else what is wrong.
std::string png_chain_problem(std::string_view b) {
    std::size_t i = 8;
    while (true) {
        if (i + 8 > b.size()) return "truncated PNG (no IEND chunk)";
        const std::uint64_t length = be32(b, i);
        const auto type = b.substr(i + 4, 4);
        if (std::uint64_t(i) + 12 + length > b.size())
            return "truncated PNG (chunk " + std::string(type) + " runs past the end)";
        if (type == "IEND") return "";
        i += 12 + std::size_t(length);
    }
}

std::string lower_extension(const std::filesystem::path& path) {
    std::string ext = path_to_utf8(path.extension());
    for (auto& c : ext)
        c = char(std::tolower(u8(c)));
    return ext;
}

}  // namespace

std::optional<ImageHeader> peek_image_header(std::string_view b) {
    if (b.size() >= 4 && u8(b[0]) == 0xFF && u8(b[1]) == 0xD8 && u8(b[2]) == 0xFF)
        return peek_jpeg(b, nullptr);
    if (starts_with(b, kPngSignature)) {
        if (b.size() < 24 || b.substr(12, 4) != "IHDR") return std::nullopt;
        ImageHeader h;
        h.format = "png";
        h.width = int(std::min<std::uint32_t>(be32(b, 16), 0x7FFFFFFF));
        h.height = int(std::min<std::uint32_t>(be32(b, 20), 0x7FFFFFFF));
        return h;
    }
    if (starts_with(b, "BM")) {
        if (b.size() < 26) return std::nullopt;
        ImageHeader h;
        h.format = "bmp";
        if (le32(b, 14) == 12) {  // BITMAPCOREHEADER: 16-bit sizes
            h.width = int(le16(b, 18));
            h.height = int(le16(b, 20));
        } else {
            const auto w = std::int64_t(std::int32_t(le32(b, 18)));
            const auto hh = std::int64_t(std::int32_t(le32(b, 22)));  // negative: top-down rows
            h.width = int(std::min<std::int64_t>(w < 0 ? -w : w, 0x7FFFFFFF));
            h.height = int(std::min<std::int64_t>(hh < 0 ? -hh : hh, 0x7FFFFFFF));
        }
        return h;
    }
    if (starts_with(b, "RIFF")) return peek_webp(b);
    if (starts_with(b, std::string_view("II*\0", 4)) ||
        starts_with(b, std::string_view("MM\0*", 4)))
        return peek_tiff(b);
    return std::nullopt;
}

std::string image_bytes_problem(std::string_view b, const ImageLimits& limits) {
    if (b.empty()) return "empty file (0 bytes)";
    if (b.size() > limits.max_file_bytes)
        return "file is " + std::to_string(b.size()) + " bytes, over the limit of " +
               std::to_string(limits.max_file_bytes);
    const bool jpeg = b.size() >= 3 && u8(b[0]) == 0xFF && u8(b[1]) == 0xD8 && u8(b[2]) == 0xFF;
    std::size_t scan_start = 0;
    const auto header = jpeg ? peek_jpeg(b, &scan_start) : peek_image_header(b);
    if (!header) {
        if (jpeg) return "truncated or corrupt JPEG (no frame header before the end)";
        if (starts_with(b, kPngSignature)) return "corrupt PNG (no IHDR chunk)";
        return "unknown or unsupported image format (JPEG, PNG, BMP, WebP and TIFF are read)";
    }
    if (header->width <= 0 || header->height <= 0)
        return "image header gives an empty size " + std::to_string(header->width) + "x" +
               std::to_string(header->height);
    const std::uint64_t pixels = std::uint64_t(header->width) * std::uint64_t(header->height);
    if (pixels > limits.max_pixels)
        return "image header claims " + std::to_string(header->width) + "x" +
               std::to_string(header->height) + " = " + std::to_string(pixels) +
               " pixels, over the limit of " + std::to_string(limits.max_pixels);
    if (jpeg) {
        // Entropy-coded data never holds FF D9 (0xFF is stuffed as FF 00), so an end-of-image
        // marker after the scan start and near the end means the file is complete. A little
        // trailing data (some cameras append some) is tolerated.
        if (scan_start == 0) return "truncated JPEG (no start-of-scan marker)";
        const std::size_t from =
            std::max(scan_start, b.size() > 4096 ? b.size() - 4096 : std::size_t{0});
        bool found = false;
        for (std::size_t i = b.size() - 1; i > from; --i)
            if (u8(b[i]) == 0xD9 && u8(b[i - 1]) == 0xFF) {
                found = true;
                break;
            }
        if (!found) return "truncated JPEG (no end-of-image marker FFD9)";
    } else if (header->format == "png") {
        return png_chain_problem(b);
    }
    return "";
}

int jpeg_decode_scale(int width, int height, int min_long_side) {
    const int long_side = std::max(width, height);
    if (min_long_side <= 0) return 1;
    int scale = 1;
    // libjpeg rounds the scaled size up: ceil(long_side / scale).
    while (scale < 8 && (long_side + 2 * scale - 1) / (2 * scale) >= min_long_side)
        scale *= 2;
    return scale;
}

namespace {

// Turns a decoded JPEG as stored into the way it is meant to be seen, as cv::imdecode does.
void apply_exif_orientation(cv::Mat& image, int orientation) {
    if (orientation >= 5) cv::transpose(image, image);
    switch (orientation) {
        case 2:
        case 6:
            cv::flip(image, image, 1);
            break;
        case 3:
        case 7:
            cv::flip(image, image, -1);
            break;
        case 4:
        case 8:
            cv::flip(image, image, 0);
            break;
        default:
            break;
    }
}

}  // namespace

cv::Mat decode_image(std::string_view bytes, const std::string& where, const ImageLimits& limits,
                     int min_long_side) {
    const std::string problem = image_bytes_problem(bytes, limits);
    if (!problem.empty()) throw InputError(where, problem);
    const auto header = peek_image_header(bytes);
    const bool jpeg = header && header->format == "jpeg";
    const int scale = jpeg ? jpeg_decode_scale(header->width, header->height, min_long_side) : 1;
    if (jpeg) {
        cv::Mat image;
        const JpegDecodeResult r =
            decode_jpeg_bgr(bytes, scale, limits.max_pixels, [&](int width, int height) {
                image.create(height, width, CV_8UC3);
                return image.data;
            });
        if (r.status == JpegDecodeStatus::failed)
            throw InputError(where, "cannot decode JPEG: " + r.problem);
        if (r.status == JpegDecodeStatus::decoded) {
            apply_exif_orientation(image, header->orientation);
            return image;
        }
        // CMYK and YCCK: OpenCV converts those itself, at the same scale.
    }
    const cv::Mat raw(1, int(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data()));
    const int flags = scale == 8   ? cv::IMREAD_REDUCED_COLOR_8
                      : scale == 4 ? cv::IMREAD_REDUCED_COLOR_4
                      : scale == 2 ? cv::IMREAD_REDUCED_COLOR_2
                                   : cv::IMREAD_COLOR;
    cv::Mat image;
    try {
        image = cv::imdecode(raw, flags);
    } catch (const cv::Exception& e) {
        throw InputError(where, std::string("cannot decode image: ") + e.what());
    }
    if (image.empty())
        throw InputError(where, "cannot decode image (corrupt data or unsupported variant)");
    return image;
}

cv::Mat read_image(const std::filesystem::path& path, const ImageLimits& limits,
                   int min_long_side) {
    const std::string bytes = read_file_bytes_limited(path, limits.max_file_bytes);
    return decode_image(bytes, path_to_utf8(path), limits, min_long_side);
}

std::optional<ImageHeader> read_image_header(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    // 64 KiB holds the frame header of nearly every JPEG (EXIF blocks come first); read on
    // only when it does not.
    std::string bytes(64 * 1024, '\0');
    in.read(bytes.data(), std::streamsize(bytes.size()));
    bytes.resize(std::size_t(in.gcount()));
    auto header = peek_image_header(bytes);
    if (!header && bytes.size() == 64 * 1024) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(path, ec);
        if (!ec && size <= (64u << 20)) {
            bytes = read_file_bytes_limited(path, 64u << 20);
            header = peek_image_header(bytes);
        }
    }
    return header;
}

std::string image_file_problem(const std::filesystem::path& path, const ImageLimits& limits) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return "image file is missing";
    if (std::filesystem::is_directory(path, ec)) return "is a directory, not an image file";
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) return "cannot read image file: " + ec.message();
    if (size > limits.max_file_bytes)
        return "file is " + std::to_string(size) + " bytes, over the limit of " +
               std::to_string(limits.max_file_bytes);
    try {
        return image_bytes_problem(read_file_bytes_limited(path, limits.max_file_bytes), limits);
    } catch (const InputError& e) {
        std::string what = e.what();
        if (!e.where().empty() && what.rfind(e.where() + ": ", 0) == 0)
            what.erase(0, e.where().size() + 2);
        return what;
    }
}

void write_image(const std::filesystem::path& path, const cv::Mat& image, int jpeg_quality) {
    const std::string where = path_to_utf8(path);
    if (image.empty()) throw Error(where + ": cannot write an empty image");
    std::string ext = lower_extension(path);
    if (ext.empty()) ext = ".png";
    std::vector<int> params;
    if (ext == ".jpg" || ext == ".jpeg")
        params = {cv::IMWRITE_JPEG_QUALITY, std::clamp(jpeg_quality, 1, 100)};
    std::vector<unsigned char> buffer;
    bool ok = false;
    try {
        ok = cv::imencode(ext, image, buffer, params);
    } catch (const cv::Exception& e) {
        throw Error(where + ": cannot encode image: " + e.what());
    }
    if (!ok) throw Error(where + ": cannot encode image as " + ext);
    write_file_atomically(
        path, std::string_view(reinterpret_cast<const char*>(buffer.data()), buffer.size()));
}

}  // namespace crucible::data
