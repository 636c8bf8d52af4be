#include "core/data/augment/augment.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "core/base/error.h"
#include "core/data/augment/resize_simd.h"

namespace crucible::data {
namespace {

constexpr double kPi = 3.14159265358979323846;

void check_range(const char* name, double v, double lo, double hi) {
    if (!std::isfinite(v) || v < lo || v > hi)
        throw InputError(name, "must be between " + std::to_string(lo) + " and " +
                                   std::to_string(hi) + ", got " + std::to_string(v));
}

}  // namespace

void validate_augment_options(const AugmentOptions& o) {
    if (o.imgsz < 32 || o.imgsz > 8192 || o.imgsz % 2 != 0)
        throw InputError("imgsz", "must be an even number between 32 and 8192");
    check_range("mosaic", o.mosaic, 0, 1);
    check_range("degrees", o.degrees, 0, 180);
    check_range("translate", o.translate, 0, 0.9);
    check_range("scale", o.scale, 0, 0.95);
    check_range("shear", o.shear, 0, 89);
    check_range("perspective", o.perspective, 0, 0.01);
    check_range("hsv_h", o.hsv_h, 0, 1);
    check_range("hsv_s", o.hsv_s, 0, 1);
    check_range("hsv_v", o.hsv_v, 0, 1);
    check_range("fliplr", o.fliplr, 0, 1);
    check_range("flipud", o.flipud, 0, 1);
    if (o.close_mosaic < 0) throw InputError("close_mosaic", "must not be negative");
    check_range("pad_value", o.pad_value, 0, 255);
}

bool mosaic_active(const AugmentOptions& options, int epoch, int epochs) {
    if (options.mosaic <= 0) return false;
    // As the reference trainer: mosaic closes at epoch (epochs - close_mosaic) and stays closed;
    // a run no longer than close_mosaic epochs has no such epoch and keeps mosaic throughout
    // (only epochs == close_mosaic closes it at the first epoch).
    const int close_at = epochs - options.close_mosaic;
    return close_at < 0 || epoch < close_at;
}

std::vector<PixelBox> to_pixel_boxes(const std::vector<Box>& boxes, int width, int height) {
    std::vector<PixelBox> out;
    out.reserve(boxes.size());
    for (const auto& b : boxes) {
        PixelBox p;
        p.cls = b.cls;
        p.x1 = static_cast<float>((b.cx - b.w / 2) * width);
        p.x2 = static_cast<float>((b.cx + b.w / 2) * width);
        p.y1 = static_cast<float>((b.cy - b.h / 2) * height);
        p.y2 = static_cast<float>((b.cy + b.h / 2) * height);
        out.push_back(p);
    }
    return out;
}

std::vector<Box> to_normalized_boxes(const std::vector<PixelBox>& boxes, int width, int height) {
    std::vector<Box> out;
    out.reserve(boxes.size());
    for (const auto& p : boxes) {
        Box b;
        b.cls = p.cls;
        b.cx = (static_cast<double>(p.x1) + p.x2) / 2 / width;
        b.cy = (static_cast<double>(p.y1) + p.y2) / 2 / height;
        b.w = (static_cast<double>(p.x2) - p.x1) / width;
        b.h = (static_cast<double>(p.y2) - p.y1) / height;
        out.push_back(b);
    }
    return out;
}

cv::Size long_side_size(int width, int height, int imgsz) {
    const int longest = std::max(width, height);
    if (longest == imgsz || longest == 0) return {width, height};
    const double r = static_cast<double>(imgsz) / longest;
    return {std::max(1, static_cast<int>(std::lround(width * r))),
            std::max(1, static_cast<int>(std::lround(height * r)))};
}

LetterboxInfo letterbox_geometry(int in_w, int in_h, int width, int height, bool scaleup,
                                 cv::Rect* content) {
    double r = std::min(static_cast<double>(width) / std::max(1, in_w),
                        static_cast<double>(height) / std::max(1, in_h));
    if (!scaleup) r = std::min(r, 1.0);
    const int nw = std::clamp(static_cast<int>(std::lround(in_w * r)), 1, width);
    const int nh = std::clamp(static_cast<int>(std::lround(in_h * r)), 1, height);
    LetterboxInfo info;
    info.scale = r;
    info.pad_left = (width - nw) / 2;
    info.pad_top = (height - nh) / 2;
    info.width = width;
    info.height = height;
    if (content) *content = cv::Rect(info.pad_left, info.pad_top, nw, nh);
    return info;
}

LabeledImage resize_long_side(const cv::Mat& image, const std::vector<Box>& boxes, int imgsz) {
    LabeledImage out;
    const cv::Size size = long_side_size(image.cols, image.rows, imgsz);
    if (size == image.size()) {
        out.image = image;
    } else {
        const bool shrink = std::max(size.width, size.height) < std::max(image.cols, image.rows);
        cv::resize(image, out.image, size, 0, 0, shrink ? cv::INTER_AREA : cv::INTER_LINEAR);
    }
    out.boxes = to_pixel_boxes(boxes, out.image.cols, out.image.rows);
    return out;
}

LabeledImage letterbox(const LabeledImage& in, int width, int height, int pad_value, bool scaleup,
                       LetterboxInfo* info) {
    LabeledImage out;
    const int w = in.image.cols, h = in.image.rows;
    cv::Rect content;
    const LetterboxInfo geometry = letterbox_geometry(w, h, width, height, scaleup, &content);
    const int nw = content.width, nh = content.height;
    const int left = content.x, top = content.y;
    out.image.create(height, width, CV_8UC3);
    if (nw != width || nh != height) out.image.setTo(cv::Scalar::all(pad_value));
    cv::Mat dst = out.image(cv::Rect(left, top, nw, nh));
    if (nw == w && nh == h)
        in.image.copyTo(dst);
    else
        cv::resize(in.image, dst, cv::Size(nw, nh), 0, 0, cv::INTER_LINEAR);
    const double sx = static_cast<double>(nw) / std::max(1, w);
    const double sy = static_cast<double>(nh) / std::max(1, h);
    out.boxes.reserve(in.boxes.size());
    for (PixelBox b : in.boxes) {
        b.x1 = static_cast<float>(b.x1 * sx + left);
        b.x2 = static_cast<float>(b.x2 * sx + left);
        b.y1 = static_cast<float>(b.y1 * sy + top);
        b.y2 = static_cast<float>(b.y2 * sy + top);
        out.boxes.push_back(b);
    }
    if (info) *info = geometry;
    return out;
}

namespace {

// Builds the part `region` (canvas coordinates) of the 2*imgsz mosaic canvas with centre (xc, yc)
// into out.image (region-sized), and every box in full canvas coordinates. The region may reach
// past the canvas; all that no image covers is pad_value.
void build_mosaic(const LabeledImage* const images[4], int imgsz, int pad_value, int xc, int yc,
                  const cv::Rect& region, LabeledImage& out) {
    const int S = 2 * imgsz;
    out.image.create(region.height, region.width, CV_8UC3);  // keeps a caller's buffer of that size
    out.boxes.clear();
    // The part of each image that lands inside the region: where (canvas) and from where (image).
    struct Piece {
        cv::Rect placed;
        const cv::Mat* image = nullptr;
        cv::Point from;
    };
    Piece pieces[4];
    int count = 0;
    for (int i = 0; i < 4; ++i) {
        const LabeledImage* im = images[i];
        if (!im || im->image.empty()) continue;
        CV_Assert(im->image.type() == CV_8UC3);
        const int w = im->image.cols, h = im->image.rows;
        int x1a, y1a, x2a, y2a, x1b, y1b;
        if (i == 0) {
            x1a = std::max(xc - w, 0), y1a = std::max(yc - h, 0), x2a = xc, y2a = yc;
            x1b = w - (x2a - x1a), y1b = h - (y2a - y1a);
        } else if (i == 1) {
            x1a = xc, y1a = std::max(yc - h, 0), x2a = std::min(xc + w, S), y2a = yc;
            x1b = 0, y1b = h - (y2a - y1a);
        } else if (i == 2) {
            x1a = std::max(xc - w, 0), y1a = yc, x2a = xc, y2a = std::min(S, yc + h);
            x1b = w - (x2a - x1a), y1b = 0;
        } else {
            x1a = xc, y1a = yc, x2a = std::min(xc + w, S), y2a = std::min(S, yc + h);
            x1b = 0, y1b = 0;
        }
        const int cw = x2a - x1a, ch = y2a - y1a;
        if (cw <= 0 || ch <= 0) continue;
        const cv::Rect placed = cv::Rect(x1a, y1a, cw, ch) & region;
        if (!placed.empty())
            pieces[count++] = {placed, &im->image,
                               cv::Point(placed.x - x1a + x1b, placed.y - y1a + y1b)};
        const float padw = static_cast<float>(x1a - x1b), padh = static_cast<float>(y1a - y1b);
        for (PixelBox b : im->boxes) {
            // Shift, then clip to the placed region (the crop only happens at canvas edges).
            b.x1 = std::clamp(b.x1 + padw, static_cast<float>(x1a), static_cast<float>(x2a));
            b.x2 = std::clamp(b.x2 + padw, static_cast<float>(x1a), static_cast<float>(x2a));
            b.y1 = std::clamp(b.y1 + padh, static_cast<float>(y1a), static_cast<float>(y2a));
            b.y2 = std::clamp(b.y2 + padh, static_cast<float>(y1a), static_cast<float>(y2a));
            if (b.x2 > b.x1 && b.y2 > b.y1) out.boxes.push_back(b);
        }
    }
    // Row by row, each byte written once: the pieces that cross the row, the pad between and
    // around them. (Filling the whole region first and copying over it wrote up to 5 MB twice.)
    // A row above the centre crosses only images 0 and 1, one below only 2 and 3, so the pieces
    // come left to right in their order.
    const auto pad = static_cast<int>(pad_value);
    for (int y = region.y; y < region.y + region.height; ++y) {
        std::uint8_t* row = out.image.ptr<std::uint8_t>(y - region.y);
        int filled = region.x;  // canvas x up to which this row is written
        for (int k = 0; k < count; ++k) {
            const Piece& p = pieces[k];
            if (y < p.placed.y || y >= p.placed.y + p.placed.height) continue;
            if (p.placed.x > filled)  // (pieces abut or leave a gap; they never overlap)
                std::memset(row + 3 * (filled - region.x), pad,
                            3 * static_cast<std::size_t>(p.placed.x - filled));
            std::memcpy(row + 3 * (p.placed.x - region.x),
                        p.image->ptr<std::uint8_t>(p.from.y + y - p.placed.y) + 3 * p.from.x,
                        3 * static_cast<std::size_t>(p.placed.width));
            filled = p.placed.x + p.placed.width;
        }
        std::memset(row + 3 * (filled - region.x), pad,
                    3 * static_cast<std::size_t>(region.x + region.width - filled));
    }
}

void draw_mosaic_centre(int imgsz, Rng& rng, int& xc, int& yc) {
    const int s = imgsz;
    xc = static_cast<int>(rng.uniform_int(s / 2, s + s / 2 - 1));
    yc = static_cast<int>(rng.uniform_int(s / 2, s + s / 2 - 1));
}

bool is_projective(const cv::Matx33d& M) {
    return M(2, 0) != 0 || M(2, 1) != 0 || M(2, 2) != 1;
}

}  // namespace

LabeledImage mosaic4(const LabeledImage* const images[4], int imgsz, int pad_value, Rng& rng) {
    int xc, yc;
    draw_mosaic_centre(imgsz, rng, xc, yc);
    LabeledImage out;
    build_mosaic(images, imgsz, pad_value, xc, yc, cv::Rect(0, 0, 2 * imgsz, 2 * imgsz), out);
    return out;
}

std::optional<ResizeWarp> warp_as_resize(const cv::Matx33d& M, int out_w, int out_h) {
    if (is_projective(M) || M(0, 1) != 0 || M(1, 0) != 0 || !(M(0, 0) > 0) || !(M(1, 1) > 0))
        return std::nullopt;
    // cv::resize samples output pixel x of a rectangle [X, X + W) at X + (x + 0.5) W / out - 0.5,
    // the warp at (x - t) / s. W = out / s rounded; then X, rounded, so that the middle pixel
    // samples where the warp does; then the warp that the resize does is solved back from them.
    ResizeWarp warp;
    warp.matrix = cv::Matx33d::eye();
    int origin[2], size[2];
    const int out[2] = {out_w, out_h};
    for (int axis = 0; axis < 2; ++axis) {
        const double scale = M(axis, axis), shift = M(axis, 2);
        size[axis] = std::max(1, static_cast<int>(std::lround(out[axis] / scale)));
        const double snapped = static_cast<double>(out[axis]) / size[axis];
        const double middle = (out[axis] - 1) / 2.0;
        const double exact_origin = (middle - shift) / scale - (middle + 0.5) / snapped + 0.5;
        if (!(std::abs(exact_origin) < 1e8)) return std::nullopt;
        origin[axis] = static_cast<int>(std::lround(exact_origin));
        warp.matrix(axis, axis) = snapped;
        warp.matrix(axis, 2) = (0.5 - origin[axis]) * snapped - 0.5;
    }
    warp.source = cv::Rect(origin[0], origin[1], size[0], size[1]);
    return warp;
}

LabeledImage mosaic_affine(const LabeledImage* const images[4], const AugmentOptions& o, Rng& rng) {
    const int s = o.imgsz, S = 2 * s;
    int xc, yc;
    draw_mosaic_centre(s, rng, xc, yc);
    double sc = 1;
    const cv::Matx33d M = random_affine_matrix(o, S, S, s, s, rng, &sc);
    // The warp the pixels get and the boxes follow: a resize where M only scales and
    // translates (see apply_affine).
    const std::optional<ResizeWarp> resize = warp_as_resize(M, s, s);
    const cv::Matx33d used = resize ? resize->matrix : M;
    cv::Rect region(0, 0, S, S);
    if (resize) {
        // The resized rectangle: it may reach past the canvas by the translation (padding, as
        // the warp's border would be).
        region = resize->source;
    } else if (!is_projective(M)) {
        // The canvas pixels the warp reads: the preimage of the output, plus a margin for the
        // bilinear neighbours.
        const cv::Matx33d Minv = M.inv();
        double x1 = 1e300, y1 = 1e300, x2 = -1e300, y2 = -1e300;
        for (double x : {0.0, static_cast<double>(s)})
            for (double y : {0.0, static_cast<double>(s)}) {
                const double cx = Minv(0, 0) * x + Minv(0, 1) * y + Minv(0, 2);
                const double cy = Minv(1, 0) * x + Minv(1, 1) * y + Minv(1, 2);
                x1 = std::min(x1, cx), x2 = std::max(x2, cx);
                y1 = std::min(y1, cy), y2 = std::max(y2, cy);
            }
        const auto lo = [](double v) {
            return static_cast<int>(std::clamp(std::floor(v) - 2, -1.0, 1e6));
        };
        const auto hi = [](double v) {
            return static_cast<int>(std::clamp(std::ceil(v) + 3, -1.0, 1e6));
        };
        cv::Rect need(lo(x1), lo(y1), 0, 0);
        need.width = hi(x2) - need.x;
        need.height = hi(y2) - need.y;
        region = need & cv::Rect(0, 0, S, S);
        if (region.empty()) region = cv::Rect(0, 0, 1, 1);
    }
    // The canvas lives in per-thread scratch memory: reallocating (and page-faulting) up to 5 MB
    // per sample costs more than building it.
    thread_local cv::Mat storage;
    const std::size_t need = static_cast<std::size_t>(region.area()) * 3;
    if (storage.empty() || storage.total() < need)
        storage.create(1, static_cast<int>(std::max<std::size_t>(need, 12u * s * s)), CV_8U);
    LabeledImage canvas;
    canvas.image = cv::Mat(region.height, region.width, CV_8UC3, storage.data);
    build_mosaic(images, s, o.pad_value, xc, yc, region, canvas);
    cv::Matx33d shift = cv::Matx33d::eye();
    shift(0, 2) = region.x;
    shift(1, 2) = region.y;
    LabeledImage pixels_only;
    pixels_only.image = canvas.image;
    // For a resize, apply_affine finds the whole region as its rectangle again.
    LabeledImage out = apply_affine(pixels_only, used * shift, s, s, sc, o);
    out.boxes = transform_boxes(canvas.boxes, used, s, s, sc, o);
    return out;
}

cv::Matx33d random_affine_matrix(const AugmentOptions& o, int in_w, int in_h, int out_w, int out_h,
                                 Rng& rng, double* scale_drawn) {
    cv::Matx33d C = cv::Matx33d::eye();
    C(0, 2) = -in_w / 2.0;
    C(1, 2) = -in_h / 2.0;
    cv::Matx33d P = cv::Matx33d::eye();
    P(2, 0) = rng.uniform(-o.perspective, o.perspective);
    P(2, 1) = rng.uniform(-o.perspective, o.perspective);
    const double angle = rng.uniform(-o.degrees, o.degrees) * kPi / 180;
    const double s = rng.uniform(1 - o.scale, 1 + o.scale);
    // Rotation by `angle` (counter-clockwise on screen, as cv::getRotationMatrix2D) and scale.
    cv::Matx33d R = cv::Matx33d::eye();
    R(0, 0) = s * std::cos(angle);
    R(0, 1) = s * std::sin(angle);
    R(1, 0) = -s * std::sin(angle);
    R(1, 1) = s * std::cos(angle);
    cv::Matx33d Sh = cv::Matx33d::eye();
    Sh(0, 1) = std::tan(rng.uniform(-o.shear, o.shear) * kPi / 180);
    Sh(1, 0) = std::tan(rng.uniform(-o.shear, o.shear) * kPi / 180);
    cv::Matx33d T = cv::Matx33d::eye();
    T(0, 2) = rng.uniform(0.5 - o.translate, 0.5 + o.translate) * out_w;
    T(1, 2) = rng.uniform(0.5 - o.translate, 0.5 + o.translate) * out_h;
    if (scale_drawn) *scale_drawn = s;
    return T * Sh * R * P * C;
}

std::vector<PixelBox> transform_boxes(const std::vector<PixelBox>& boxes, const cv::Matx33d& M,
                                      int out_w, int out_h, double scale, const AugmentOptions& o) {
    std::vector<PixelBox> out;
    out.reserve(boxes.size());
    const bool projective = M(2, 0) != 0 || M(2, 1) != 0 || M(2, 2) != 1;
    for (const auto& b : boxes) {
        const double xs[4] = {b.x1, b.x2, b.x2, b.x1};
        const double ys[4] = {b.y1, b.y1, b.y2, b.y2};
        double x1 = 1e300, y1 = 1e300, x2 = -1e300, y2 = -1e300;
        for (int k = 0; k < 4; ++k) {
            double x = M(0, 0) * xs[k] + M(0, 1) * ys[k] + M(0, 2);
            double y = M(1, 0) * xs[k] + M(1, 1) * ys[k] + M(1, 2);
            if (projective) {
                const double z = M(2, 0) * xs[k] + M(2, 1) * ys[k] + M(2, 2);
                x /= z;
                y /= z;
            }
            x1 = std::min(x1, x), x2 = std::max(x2, x);
            y1 = std::min(y1, y), y2 = std::max(y2, y);
        }
        x1 = std::clamp(x1, 0.0, static_cast<double>(out_w));
        x2 = std::clamp(x2, 0.0, static_cast<double>(out_w));
        y1 = std::clamp(y1, 0.0, static_cast<double>(out_h));
        y2 = std::clamp(y2, 0.0, static_cast<double>(out_h));
        const double w1 = static_cast<double>(b.x2) - b.x1, h1 = static_cast<double>(b.y2) - b.y1;
        const double w2 = x2 - x1, h2 = y2 - y1;
        const double eps = 1e-16;
        const double ar = std::max(w2 / (h2 + eps), h2 / (w2 + eps));
        const bool keep = w2 > o.min_wh && h2 > o.min_wh &&
                          w2 * h2 / (w1 * h1 * scale * scale + eps) > o.min_area_ratio &&
                          ar < o.max_aspect;
        if (!keep) continue;
        PixelBox p;
        p.cls = b.cls;
        p.x1 = static_cast<float>(x1), p.y1 = static_cast<float>(y1);
        p.x2 = static_cast<float>(x2), p.y2 = static_cast<float>(y2);
        out.push_back(p);
    }
    return out;
}

namespace {

// cv::resize with INTER_LINEAR, through resize_simd.h's pass where it applies.
void resize_linear(const cv::Mat& src, cv::Mat& dst, cv::Size size) {
    if (src.type() == CV_8UC3 && !src.empty() && size.area() > 0) {
        thread_local std::vector<std::uint8_t> scratch;  // per thread, reused across samples
        scratch.resize(bilinear_scratch_bytes(size.width) + 63);
        void* aligned = scratch.data() + (-reinterpret_cast<std::uintptr_t>(scratch.data()) & 63);
        cv::Mat out(size, CV_8UC3);
        if (resize_bgr_bilinear(BgrPixels{src.data, src.cols, src.rows, src.step}, out.data,
                                size.width, size.height, out.step, aligned)) {
            dst = out;
            return;
        }
    }
    cv::resize(src, dst, size, 0, 0, cv::INTER_LINEAR);
}

}  // namespace

LabeledImage apply_affine(const LabeledImage& in, const cv::Matx33d& M, int out_w, int out_h,
                          double scale, const AugmentOptions& o) {
    LabeledImage out;
    const cv::Scalar border = cv::Scalar::all(o.pad_value);
    const cv::Size size(out_w, out_h);
    cv::Matx33d used = M;  // the warp the pixels get; the boxes follow it
    if (const std::optional<ResizeWarp> resize = warp_as_resize(M, out_w, out_h)) {
        used = resize->matrix;
        const cv::Rect inside = resize->source & cv::Rect(0, 0, in.image.cols, in.image.rows);
        if (inside == resize->source) {
            resize_linear(in.image(inside), out.image, size);
        } else {  // the part past the image is border, as the warp's would be
            cv::Mat padded(resize->source.size(), in.image.type(), border);
            if (!inside.empty()) in.image(inside).copyTo(padded(inside - resize->source.tl()));
            resize_linear(padded, out.image, size);
        }
    } else if (is_projective(M)) {
        cv::warpPerspective(in.image, out.image, cv::Mat(M), size, cv::INTER_LINEAR,
                            cv::BORDER_CONSTANT, border);
    } else {
        const cv::Matx23d A(M(0, 0), M(0, 1), M(0, 2), M(1, 0), M(1, 1), M(1, 2));
        cv::warpAffine(in.image, out.image, cv::Mat(A), size, cv::INTER_LINEAR, cv::BORDER_CONSTANT,
                       border);
    }
    out.boxes = transform_boxes(in.boxes, used, out_w, out_h, scale, o);
    return out;
}

namespace {

// One table per channel of a continuous interleaved 3-channel 8-bit image (cvtColor's output),
// in place. cv::LUT with a 3-channel table costs about twice this loop (it was ~0.8 ms of the
// ~1.7 ms HSV step at 640²).
void apply_channel_luts(cv::Mat& image, const std::uint8_t (&luts)[3][256]) {
    CV_Assert(image.type() == CV_8UC3 && image.isContinuous());
    std::uint8_t* p = image.data;
    const std::size_t values = image.total() * 3;
    for (std::size_t i = 0; i < values; i += 3) {
        p[i] = luts[0][p[i]];
        p[i + 1] = luts[1][p[i + 1]];
        p[i + 2] = luts[2][p[i + 2]];
    }
}

}  // namespace

HsvGains draw_hsv_gains(double hgain, double sgain, double vgain, Rng& rng) {
    HsvGains gains;
    gains.hue = rng.uniform(-1, 1) * hgain + 1;
    gains.saturation = rng.uniform(-1, 1) * sgain + 1;
    gains.value = rng.uniform(-1, 1) * vgain + 1;
    return gains;
}

void augment_hsv(cv::Mat& bgr, double hgain, double sgain, double vgain, Rng& rng) {
    const HsvGains gains = draw_hsv_gains(hgain, sgain, vgain, rng);  // drawn even when unused
    if (hgain == 0 && sgain == 0 && vgain == 0) return;
    apply_hsv_gains(bgr, gains);
}

void apply_hsv_gains(cv::Mat& bgr, const HsvGains& gains) {
    if (bgr.empty()) return;
    CV_Assert(bgr.type() == CV_8UC3);
    const auto one_pass = [&](std::uint8_t* pixels, std::int64_t count) {
        return hsv_gains_avx512_vbmi(pixels, count, gains) ||
               hsv_gains_avx512(pixels, count, gains) || hsv_gains_avx2(pixels, count, gains);
    };
    // The whole image in one call when its rows are continuous, else row by row; the first call
    // tells whether this CPU has a one-pass set.
    const bool whole = bgr.isContinuous();
    const int calls = whole ? 1 : bgr.rows;
    const std::int64_t pixels = whole ? static_cast<std::int64_t>(bgr.total()) : bgr.cols;
    if (!one_pass(bgr.ptr(0), pixels)) {
        apply_hsv_gains_opencv(bgr, gains);
        return;
    }
    for (int y = 1; y < calls; ++y)
        one_pass(bgr.ptr(y), pixels);
}

void apply_hsv_gains_opencv(cv::Mat& bgr, const HsvGains& gains) {
    std::uint8_t luts[3][256];
    for (int x = 0; x < 256; ++x) {
        const double h = std::fmod(x * gains.hue, 180.0);
        luts[0][x] = static_cast<std::uint8_t>(h < 0 ? h + 180 : h);
        luts[1][x] = static_cast<std::uint8_t>(std::clamp(x * gains.saturation, 0.0, 255.0));
        luts[2][x] = static_cast<std::uint8_t>(std::clamp(x * gains.value, 0.0, 255.0));
    }
    thread_local cv::Mat hsv;  // per-thread scratch, reused across samples; continuous
    cv::cvtColor(bgr, hsv, cv::COLOR_BGR2HSV);
    apply_channel_luts(hsv, luts);
    cv::cvtColor(hsv, bgr, cv::COLOR_HSV2BGR);
}

void flip_horizontal(LabeledImage& img) {
    cv::flip(img.image, img.image, 1);
    const float w = static_cast<float>(img.image.cols);
    for (auto& b : img.boxes) {
        const float x1 = w - b.x2, x2 = w - b.x1;
        b.x1 = x1, b.x2 = x2;
    }
}

void flip_vertical(LabeledImage& img) {
    cv::flip(img.image, img.image, 0);
    const float h = static_cast<float>(img.image.rows);
    for (auto& b : img.boxes) {
        const float y1 = h - b.y2, y2 = h - b.y1;
        b.y1 = y1, b.y2 = y2;
    }
}

LabeledImage augment_train_sample(std::int64_t index, std::span<const std::int64_t> partners,
                                  const SampleSource& load, const AugmentOptions& o,
                                  bool use_mosaic, Rng& rng) {
    const int s = o.imgsz;
    LabeledImage out;
    const bool mosaic = use_mosaic && rng.chance(o.mosaic);
    if (mosaic) {
        LabeledImage parts[4];
        std::int64_t ids[4] = {index, index, index, index};
        const auto last = static_cast<std::int64_t>(partners.size()) - 1;
        for (int k = 1; k < 4; ++k) {
            // Drawn even without a pool, so the draws after it stay the same.
            const std::int64_t pick = rng.uniform_int(0, std::max<std::int64_t>(last, 0));
            if (last >= 0) ids[k] = partners[static_cast<std::size_t>(pick)];
        }
        if (!load(ids[0], parts[0])) return {};
        for (int k = 1; k < 4; ++k)
            if (!load(ids[k], parts[k])) parts[k] = {};
        const LabeledImage* ptrs[4] = {&parts[0], &parts[1], &parts[2], &parts[3]};
        out = mosaic_affine(ptrs, o, rng);
    } else {
        LabeledImage one;
        if (!load(index, one)) return {};
        const LabeledImage boxed = letterbox(one, s, s, o.pad_value, /*scaleup=*/false);
        double sc = 1;
        const cv::Matx33d M = random_affine_matrix(o, s, s, s, s, rng, &sc);
        out = apply_affine(boxed, M, s, s, sc, o);
    }
    augment_hsv(out.image, o.hsv_h, o.hsv_s, o.hsv_v, rng);
    if (rng.chance(o.flipud)) flip_vertical(out);
    if (rng.chance(o.fliplr)) flip_horizontal(out);
    return out;
}

cv::Rect val_content_region(int width, int height, int imgsz) {
    const cv::Size resized = long_side_size(width, height, imgsz);
    cv::Rect content;
    letterbox_geometry(resized.width, resized.height, imgsz, imgsz, /*scaleup=*/true, &content);
    return content;
}

LabeledImage prepare_val_sample(const LabeledImage& resized, const AugmentOptions& o) {
    return letterbox(resized, o.imgsz, o.imgsz, o.pad_value, /*scaleup=*/true);
}

}  // namespace crucible::data
