#include "core/data/synth/synth.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include <opencv2/imgproc.hpp>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/augment/random.h"
#include "core/data/image_io.h"

namespace crucible::data {
namespace {

constexpr std::array<const char*, 10> kShapeNames = {"circle",  "rectangle", "triangle", "star",
                                                     "cross",   "diamond",   "hexagon",  "ring",
                                                     "ellipse", "arrow"};

constexpr double kPi = 3.14159265358979323846;

std::uint64_t split_code(const std::string& split) {
    // FNV-1a: a stable number for the split name.
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : split) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

void check_options(const SynthOptions& o) {
    if (o.classes < 1 || o.classes > synth_max_classes())
        throw InputError("--classes",
                         "must be between 1 and " + std::to_string(synth_max_classes()));
    if (o.imgsz < 32 || o.imgsz > 8192) throw InputError("--imgsz", "must be between 32 and 8192");
    if (o.train < 0 || o.val < 0)
        throw InputError("--train/--val", "image counts must not be negative");
    if (o.max_objects < 1 || o.max_objects > 100)
        throw InputError("max_objects", "must be between 1 and 100");
    if (o.jpeg_quality < 1 || o.jpeg_quality > 100)
        throw InputError("jpeg_quality", "must be between 1 and 100");
}

cv::Vec3b random_colour(Rng& rng) {
    return cv::Vec3b(static_cast<uchar>(rng.uniform_int(0, 255)),
                     static_cast<uchar>(rng.uniform_int(0, 255)),
                     static_cast<uchar>(rng.uniform_int(0, 255)));
}

cv::Scalar to_scalar(const cv::Vec3b& c) {
    return cv::Scalar(c[0], c[1], c[2]);
}

// Background: a linear gradient between two colours, per-pixel noise, then distractors.
void draw_background(cv::Mat& img, Rng& rng) {
    const cv::Vec3b c0 = random_colour(rng), c1 = random_colour(rng);
    const double angle = rng.uniform(0, 2 * kPi);
    const double dx = std::cos(angle), dy = std::sin(angle);
    const double W = img.cols, H = img.rows;
    // Projection of the corners gives the range of t.
    double tmin = 1e30, tmax = -1e30;
    for (double x : {0.0, W})
        for (double y : {0.0, H}) {
            tmin = std::min(tmin, x * dx + y * dy);
            tmax = std::max(tmax, x * dx + y * dy);
        }
    const double inv = 1.0 / std::max(1e-9, tmax - tmin);
    const int amp = static_cast<int>(rng.uniform_int(3, 18));
    for (int y = 0; y < img.rows; ++y) {
        auto* row = img.ptr<cv::Vec3b>(y);
        std::uint64_t bits = 0;
        int left = 0;
        for (int x = 0; x < img.cols; ++x) {
            const double t = ((x * dx + y * dy) - tmin) * inv;
            for (int c = 0; c < 3; ++c) {
                if (left == 0) {
                    bits = rng.next_u64();
                    left = 8;
                }
                const int noise = static_cast<int>(bits & 0xFF) % (2 * amp + 1) - amp;
                bits >>= 8;
                --left;
                const double v = c0[c] + (c1[c] - c0[c]) * t + noise;
                row[x][c] = cv::saturate_cast<uchar>(v);
            }
        }
    }
    const int side = std::min(img.cols, img.rows);
    // Distractor lines.
    const int lines = static_cast<int>(rng.uniform_int(2, 8));
    for (int i = 0; i < lines; ++i) {
        cv::Point a(static_cast<int>(rng.uniform_int(0, img.cols - 1)),
                    static_cast<int>(rng.uniform_int(0, img.rows - 1)));
        cv::Point b(static_cast<int>(rng.uniform_int(0, img.cols - 1)),
                    static_cast<int>(rng.uniform_int(0, img.rows - 1)));
        const int thickness = static_cast<int>(rng.uniform_int(1, std::max(1, side / 160)));
        cv::line(img, a, b, to_scalar(random_colour(rng)), thickness, cv::LINE_8);
    }
    // Distractor blobs: irregular smooth-ish polygons.
    const int blobs = static_cast<int>(rng.uniform_int(1, 5));
    for (int i = 0; i < blobs; ++i) {
        const double cx = rng.uniform(0, img.cols), cy = rng.uniform(0, img.rows);
        const double r = rng.uniform(0.02, 0.08) * side;
        const int n = static_cast<int>(rng.uniform_int(9, 15));
        std::vector<cv::Point> poly;
        const double phase = rng.uniform(0, 2 * kPi);
        for (int k = 0; k < n; ++k) {
            const double a = phase + 2 * kPi * k / n;
            const double rr = r * rng.uniform(0.55, 1.0);
            poly.emplace_back(static_cast<int>(std::lround(cx + rr * std::cos(a))),
                              static_cast<int>(std::lround(cy + rr * std::sin(a))));
        }
        cv::fillPoly(img, std::vector<std::vector<cv::Point>>{poly}, to_scalar(random_colour(rng)),
                     cv::LINE_8);
    }
}

cv::Point rot(double x, double y, double angle, double cx, double cy) {
    const double c = std::cos(angle), s = std::sin(angle);
    return cv::Point(static_cast<int>(std::lround(cx + x * c - y * s)),
                     static_cast<int>(std::lround(cy + x * s + y * c)));
}

std::vector<cv::Point> regular(int n, double r, double angle, double cx, double cy) {
    std::vector<cv::Point> p;
    for (int k = 0; k < n; ++k) {
        const double a = 2 * kPi * k / n;
        p.push_back(rot(r * std::cos(a), r * std::sin(a), angle, cx, cy));
    }
    return p;
}

std::vector<cv::Point> from_local(const std::vector<cv::Point2d>& local, double angle, double cx,
                                  double cy) {
    std::vector<cv::Point> p;
    for (const auto& q : local)
        p.push_back(rot(q.x, q.y, angle, cx, cy));
    return p;
}

// Draws shape `cls` of radius r at (cx, cy) into `mask` (255 = shape). Coordinates are in the
// mask's frame.
void draw_shape(cv::Mat& mask, int cls, double cx, double cy, double r, double angle, Rng& rng) {
    auto fill = [&](const std::vector<cv::Point>& poly) {
        cv::fillPoly(mask, std::vector<std::vector<cv::Point>>{poly}, cv::Scalar(255), cv::LINE_8);
    };
    const cv::Point centre(static_cast<int>(std::lround(cx)), static_cast<int>(std::lround(cy)));
    const int ir = std::max(2, static_cast<int>(std::lround(r)));
    switch (cls) {
        case 0:  // circle
            cv::circle(mask, centre, ir, cv::Scalar(255), cv::FILLED, cv::LINE_8);
            break;
        case 1: {  // rectangle
            const double a = r, b = r * rng.uniform(0.45, 0.9);
            fill(from_local({{-a, -b}, {a, -b}, {a, b}, {-a, b}}, angle, cx, cy));
            break;
        }
        case 2:  // triangle
            fill(regular(3, r, angle, cx, cy));
            break;
        case 3: {  // star (5 points)
            std::vector<cv::Point2d> local;
            for (int k = 0; k < 10; ++k) {
                const double a = kPi * k / 5 - kPi / 2;
                const double rr = (k % 2 == 0) ? r : r * 0.42;
                local.emplace_back(rr * std::cos(a), rr * std::sin(a));
            }
            fill(from_local(local, angle, cx, cy));
            break;
        }
        case 4: {  // cross (plus sign)
            const double w = r * 0.33;
            fill(from_local({{-w, -r},
                             {w, -r},
                             {w, -w},
                             {r, -w},
                             {r, w},
                             {w, w},
                             {w, r},
                             {-w, r},
                             {-w, w},
                             {-r, w},
                             {-r, -w},
                             {-w, -w}},
                            angle, cx, cy));
            break;
        }
        case 5:  // diamond
            fill(from_local({{r, 0}, {0, r * 0.6}, {-r, 0}, {0, -r * 0.6}}, angle, cx, cy));
            break;
        case 6:  // hexagon
            fill(regular(6, r, angle, cx, cy));
            break;
        case 7:  // ring
            cv::circle(mask, centre, ir, cv::Scalar(255), cv::FILLED, cv::LINE_8);
            cv::circle(mask, centre, std::max(1, ir * 5 / 10), cv::Scalar(0), cv::FILLED,
                       cv::LINE_8);
            break;
        case 8: {  // ellipse
            const int deg = static_cast<int>(std::lround(angle * 180 / kPi));
            cv::ellipse(mask, centre, cv::Size(ir, std::max(2, ir * 2 / 5)), deg, 0, 360,
                        cv::Scalar(255), cv::FILLED, cv::LINE_8);
            break;
        }
        default: {  // arrow
            const double sw = r * 0.22, hw = r * 0.6, hx = r * 0.15;
            fill(from_local({{-r, -sw}, {hx, -sw}, {hx, -hw}, {r, 0}, {hx, hw}, {hx, sw}, {-r, sw}},
                            angle, cx, cy));
            break;
        }
    }
}

std::string format_label(const Box& b) {
    char line[128];
    std::snprintf(line, sizeof line, "%d %.6f %.6f %.6f %.6f\n", b.cls, b.cx, b.cy, b.w, b.h);
    return line;
}

}  // namespace

int synth_max_classes() {
    return static_cast<int>(kShapeNames.size());
}

std::vector<std::string> synth_class_names(int classes) {
    std::vector<std::string> names;
    for (int i = 0; i < classes && i < synth_max_classes(); ++i)
        names.emplace_back(kShapeNames[i]);
    return names;
}

SynthSample make_synth_sample(const SynthOptions& options, const std::string& split, int index,
                              bool with_instances) {
    check_options(options);
    Rng rng(derive_seed({options.seed, split_code(split), static_cast<std::uint64_t>(index)}));
    const int long_side = options.imgsz;
    const int short_side = static_cast<int>(std::lround(long_side * rng.uniform(0.75, 1.0)));
    const bool landscape = rng.chance(0.5);
    const int W = landscape ? long_side : short_side;
    const int H = landscape ? short_side : long_side;

    SynthSample out;
    out.image.create(H, W, CV_8UC3);
    draw_background(out.image, rng);
    if (with_instances) out.instances = cv::Mat::zeros(H, W, CV_16U);

    const int side = std::min(W, H);
    const int objects = static_cast<int>(rng.uniform_int(1, options.max_objects));
    std::vector<cv::Rect> placed;
    cv::Mat mask;
    for (int o = 0; o < objects; ++o) {
        for (int attempt = 0; attempt < 30; ++attempt) {
            const int cls = static_cast<int>(rng.uniform_int(0, options.classes - 1));
            const double r = rng.uniform(0.04, 0.16) * side;
            const bool at_border = rng.chance(0.2);
            double cx, cy;
            if (at_border) {
                // Centre near an edge so the object is cut by the border.
                const int edge = static_cast<int>(rng.uniform_int(0, 3));
                const double off = rng.uniform(-0.4, 0.4) * r;
                cx = (edge == 0) ? off : (edge == 1) ? W - 1 - off : rng.uniform(0, W);
                cy = (edge == 2) ? off : (edge == 3) ? H - 1 - off : rng.uniform(0, H);
            } else {
                cx = rng.uniform(r, W - r);
                cy = rng.uniform(r, H - r);
            }
            const double angle = rng.uniform(0, 2 * kPi);
            // Draw into a mask over the shape's neighbourhood only.
            const int reach = static_cast<int>(std::ceil(r * 1.5)) + 2;
            cv::Rect roi(static_cast<int>(std::floor(cx)) - reach,
                         static_cast<int>(std::floor(cy)) - reach, 2 * reach + 1, 2 * reach + 1);
            roi &= cv::Rect(0, 0, W, H);
            if (roi.empty()) continue;
            mask.create(roi.height, roi.width, CV_8U);
            mask.setTo(0);
            draw_shape(mask, cls, cx - roi.x, cy - roi.y, r, angle, rng);
            cv::Rect tight = cv::boundingRect(mask);
            if (tight.width < 6 || tight.height < 6) continue;
            tight.x += roi.x;
            tight.y += roi.y;
            const cv::Rect spaced(tight.x - 3, tight.y - 3, tight.width + 6, tight.height + 6);
            bool overlaps = false;
            for (const auto& p : placed)
                overlaps = overlaps || (spaced & p).area() > 0;
            if (overlaps) continue;
            // A colour that stands out from the background under the shape.
            cv::Vec3b colour = random_colour(rng);
            const cv::Scalar mean = cv::mean(out.image(roi), mask);
            for (int k = 0; k < 6; ++k) {
                const double d = std::abs(colour[0] - mean[0]) + std::abs(colour[1] - mean[1]) +
                                 std::abs(colour[2] - mean[2]);
                if (d >= 150) break;
                colour = random_colour(rng);
            }
            out.image(roi).setTo(to_scalar(colour), mask);
            if (with_instances)
                out.instances(roi).setTo(cv::Scalar(static_cast<double>(out.boxes.size() + 1)),
                                         mask);
            placed.push_back(tight);
            Box box;
            box.cls = cls;
            box.cx = (tight.x + tight.width / 2.0) / W;
            box.cy = (tight.y + tight.height / 2.0) / H;
            box.w = static_cast<double>(tight.width) / W;
            box.h = static_cast<double>(tight.height) / H;
            out.boxes.push_back(box);
            break;
        }
    }
    return out;
}

std::filesystem::path write_synth_dataset(const std::filesystem::path& out,
                                          const SynthOptions& options) {
    check_options(options);
    namespace fs = std::filesystem;
    const auto names = synth_class_names(options.classes);
    for (const char* split : {"train", "val"}) {
        const int count = std::string(split) == "train" ? options.train : options.val;
        const fs::path images = out / "images" / split;
        const fs::path labels = out / "labels" / split;
        fs::create_directories(images);
        fs::create_directories(labels);
        for (int i = 0; i < count; ++i) {
            const SynthSample s = make_synth_sample(options, split, i);
            char stem[32];
            std::snprintf(stem, sizeof stem, "%06d", i);
            write_image(images / (std::string(stem) + ".jpg"), s.image, options.jpeg_quality);
            std::string text;
            for (const auto& b : s.boxes)
                text += format_label(b);
            write_file_atomically(labels / (std::string(stem) + ".txt"), text);
        }
    }
    std::string yaml = "# Crucible synthetic detection dataset: seed " +
                       std::to_string(options.seed) + ", imgsz " + std::to_string(options.imgsz) +
                       "\n";
    yaml += "train: images/train\nval: images/val\nnc: " + std::to_string(options.classes) +
            "\nnames:\n";
    for (std::size_t i = 0; i < names.size(); ++i)
        yaml += "  " + std::to_string(i) + ": " + names[i] + "\n";
    const fs::path data_yaml = out / "data.yaml";
    write_file_atomically(data_yaml, yaml);
    return data_yaml;
}

}  // namespace crucible::data
