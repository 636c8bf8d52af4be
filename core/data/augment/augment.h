#pragma once
// Training-time augmentation for detection (SPECS.md "YOLOv8 detector"): mosaic of 4 images on a
// 2*imgsz canvas with a random centre, random affine/perspective with box transform and candidate
// filter, cropped back to imgsz; HSV jitter; flips; and letterbox for validation. Every random
// draw comes from the Rng passed in, which the loader seeds from (seed, epoch, sample index), so
// results never depend on thread scheduling.
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include <opencv2/core.hpp>

#include "core/data/augment/hsv_simd.h"
#include "core/data/augment/random.h"
#include "core/data/detection_types.h"

namespace crucible::data {

struct AugmentOptions {
    int imgsz = 640;
    double mosaic = 1.0;  // probability
    double degrees = 0.0;
    double translate = 0.1;
    double scale = 0.5;
    double shear = 0.0;  // degrees
    double perspective = 0.0;
    double hsv_h = 0.015;
    double hsv_s = 0.7;
    double hsv_v = 0.4;
    double fliplr = 0.5;
    double flipud = 0.0;
    int close_mosaic = 10;  // mosaic off for the last N epochs
    // Candidate filter after the affine: a box survives if width and height > min_wh pixels,
    // its area is > min_area_ratio of its area before (times the affine scale squared) and its
    // aspect ratio is < max_aspect.
    double min_wh = 2.0;
    double min_area_ratio = 0.1;
    double max_aspect = 100.0;
    int pad_value = 114;
};

// Checks ranges; throws InputError naming the option.
void validate_augment_options(const AugmentOptions& options);

// True when mosaic is used in `epoch` (0-based) of `epochs`: off for the last close_mosaic, in
// runs longer than that (a shorter run keeps it on throughout, as the reference's does).
bool mosaic_active(const AugmentOptions& options, int epoch, int epochs);

// A box in pixel corners (x1 <= x2, y1 <= y2) with its class.
struct PixelBox {
    int cls = 0;
    float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
};

// An image and its boxes in pixels of that image.
struct LabeledImage {
    cv::Mat image;  // 8-bit BGR
    std::vector<PixelBox> boxes;
};

std::vector<PixelBox> to_pixel_boxes(const std::vector<Box>& boxes, int width, int height);
std::vector<Box> to_normalized_boxes(const std::vector<PixelBox>& boxes, int width, int height);

// The size resize_long_side gives an image of width x height.
cv::Size long_side_size(int width, int height, int imgsz);

// Resizes so the long side is `imgsz` (aspect kept); boxes scaled with it. What the RAM cache
// holds. Images whose long side already equals imgsz are shared, not copied.
LabeledImage resize_long_side(const cv::Mat& image, const std::vector<Box>& boxes, int imgsz);

struct LetterboxInfo {
    double scale = 1.0;  // original pixels * scale = letterboxed pixels (before the pad offset)
    int pad_left = 0, pad_top = 0;
    int width = 0, height = 0;  // output size
};

// Where letterbox() puts an in_w x in_h image in width x height: its scale and padding, and in
// `content` the rectangle the image covers.
LetterboxInfo letterbox_geometry(int in_w, int in_h, int width, int height, bool scaleup,
                                 cv::Rect* content = nullptr);

// Resizes keeping the aspect ratio so the image fits width x height, centres it and pads with
// pad_value. Boxes follow. scaleup=false never enlarges.
LabeledImage letterbox(const LabeledImage& in, int width, int height, int pad_value = 114,
                       bool scaleup = true, LetterboxInfo* info = nullptr);

// Places 4 images on a 2*imgsz canvas filled with pad_value around a random centre in
// [imgsz/2, 3*imgsz/2): image 0 ends at the centre (top-left quadrant), 1 top-right, 2
// bottom-left, 3 bottom-right; each is cropped to its quadrant and its boxes clipped to the
// canvas. Empty images (bad samples) leave their quadrant empty.
LabeledImage mosaic4(const LabeledImage* const images[4], int imgsz, int pad_value, Rng& rng);

// mosaic4 followed by the random affine (random_affine_matrix for the 2*imgsz canvas, then
// apply_affine to imgsz), with the same random draws and results, but only the part of the
// canvas that the warp reads is built (a quarter to all of it, by the drawn scale).
LabeledImage mosaic_affine(const LabeledImage* const images[4], const AugmentOptions& options,
                           Rng& rng);

// A scale-and-translate warp to out_w x out_h as cv::resize (bilinear) of the input rectangle
// `source`, whose origin and size are whole pixels: about twice as fast as cv::warpAffine's
// per-pixel coordinates. Of its own matrix shifted to the rectangle's origin it gives the whole
// rectangle and the same matrix back. For that, the points where output pixels sample the input
// move: the rectangle's size by at most half a pixel, the middle pixel's point by at most half an
// input pixel, so every point by at most 3/4 of one. `matrix` is the warp the resize does. Empty
// for rotation, shear, perspective or a non-positive scale.
struct ResizeWarp {
    cv::Rect source;  // input coordinates; may reach past the input (its border then)
    cv::Matx33d matrix;
};
std::optional<ResizeWarp> warp_as_resize(const cv::Matx33d& M, int out_w, int out_h);

// The 3x3 matrix the random affine uses for an input of in_w x in_h and output out_w x out_h:
// centre to origin, perspective, rotation+scale, shear, translation to
// (0.5 +- translate) * out size.
cv::Matx33d random_affine_matrix(const AugmentOptions& options, int in_w, int in_h, int out_w,
                                 int out_h, Rng& rng, double* scale_drawn = nullptr);

// Warps the image by M to out_w x out_h (pad_value border) and transforms the boxes: the 4
// corners go through M, the enclosing box is clipped to the output, and boxes failing the
// candidate filter (see AugmentOptions) are dropped. `scale` is the affine scale for the area
// test (1 for a plain warp). Where M only scales and translates (no rotation, shear or
// perspective: the defaults), the warp is warp_as_resize's resize and the boxes follow its matrix.
LabeledImage apply_affine(const LabeledImage& in, const cv::Matx33d& M, int out_w, int out_h,
                          double scale, const AugmentOptions& options);

// Box transform alone (what apply_affine does to the boxes).
std::vector<PixelBox> transform_boxes(const std::vector<PixelBox>& boxes, const cv::Matx33d& M,
                                      int out_w, int out_h, double scale,
                                      const AugmentOptions& options);

// The HSV jitter's gains: each uniform in 1 +- its option, drawn from rng in that order.
HsvGains draw_hsv_gains(double hgain, double sgain, double vgain, Rng& rng);

// HSV jitter in place, with draw_hsv_gains' gains, through apply_hsv_gains.
void augment_hsv(cv::Mat& bgr, double hgain, double sgain, double vgain, Rng& rng);

// Multiplies hue (modulo the circle), saturation and value (both clipped) of every pixel of an
// 8-bit BGR image, in place: one pass with AVX-512 or AVX2 where the CPU has them (hsv_simd.h),
// else
// apply_hsv_gains_opencv. The two agree within OpenCV's quantisation of hue and saturation
// (a few levels in strongly coloured pixels).
void apply_hsv_gains(cv::Mat& bgr, const HsvGains& gains);

// The reference's way: OpenCV's BGR->HSV (8-bit), one table per channel (hue multiplied modulo
// 180, saturation and value multiplied and clipped, each truncated), HSV->BGR.
void apply_hsv_gains_opencv(cv::Mat& bgr, const HsvGains& gains);

// Flips in place (horizontal: x -> width - x).
void flip_horizontal(LabeledImage& img);
void flip_vertical(LabeledImage& img);

// The whole training transform for one sample. `load(i, out)` fills the resized (long side
// imgsz) image of dataset index i with its pixel boxes, or returns false for an unusable image;
// the 3 mosaic partners are drawn uniformly by rng from the dataset indices in `partners` (the
// loader passes the samples just before this one in the epoch's order; empty: the sample
// itself). Output: imgsz x imgsz BGR and its pixel boxes; an empty image when the sample itself
// could not be loaded (a bad mosaic partner only leaves its quadrant empty).
using SampleSource = std::function<bool(std::int64_t index, LabeledImage& out)>;
LabeledImage augment_train_sample(std::int64_t index, std::span<const std::int64_t> partners,
                                  const SampleSource& load, const AugmentOptions& options,
                                  bool use_mosaic, Rng& rng);

// Validation transform: letterbox to imgsz x imgsz.
LabeledImage prepare_val_sample(const LabeledImage& resized, const AugmentOptions& options);
// The rectangle of the imgsz x imgsz validation input that an image of width x height covers
// (resize_long_side, then letterbox): outside it is padding.
cv::Rect val_content_region(int width, int height, int imgsz);

}  // namespace crucible::data
