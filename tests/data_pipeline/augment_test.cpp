#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "core/base/error.h"
#include "core/data/augment/augment.h"
#include "core/data/synth/synth.h"

using namespace crucible;
using namespace crucible::data;

namespace {

cv::Matx33d translate_scale(double tx, double ty, double s) {
    return cv::Matx33d(s, 0, tx, 0, s, ty, 0, 0, 1);
}

PixelBox pbox(int cls, float x1, float y1, float x2, float y2) {
    PixelBox b;
    b.cls = cls;
    b.x1 = x1, b.y1 = y1, b.x2 = x2, b.y2 = y2;
    return b;
}

}  // namespace

TEST(Affine, KnownTranslationAndScaleMoveTheBoxExactly) {
    AugmentOptions o;
    const auto out =
        transform_boxes({pbox(3, 5, 5, 15, 25)}, translate_scale(10, 20, 2), 100, 100, 2, o);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].cls, 3);
    EXPECT_FLOAT_EQ(out[0].x1, 20);
    EXPECT_FLOAT_EQ(out[0].y1, 30);
    EXPECT_FLOAT_EQ(out[0].x2, 40);
    EXPECT_FLOAT_EQ(out[0].y2, 70);
}

TEST(Affine, ImageAndBoxMoveTogether) {
    LabeledImage in;
    in.image = cv::Mat(60, 80, CV_8UC3, cv::Scalar(0, 0, 0));
    in.image(cv::Rect(5, 8, 10, 12)).setTo(cv::Scalar(255, 255, 255));
    in.boxes = {pbox(1, 5, 8, 15, 20)};
    AugmentOptions o;
    o.pad_value = 0;
    const auto out = apply_affine(in, translate_scale(7, 3, 1), 80, 60, 1, o);
    ASSERT_EQ(out.boxes.size(), 1u);
    cv::Mat gray;
    cv::cvtColor(out.image, gray, cv::COLOR_BGR2GRAY);
    const cv::Rect white = cv::boundingRect(gray > 128);
    EXPECT_EQ(white, cv::Rect(12, 11, 10, 12));
    EXPECT_FLOAT_EQ(out.boxes[0].x1, static_cast<float>(white.x));
    EXPECT_FLOAT_EQ(out.boxes[0].y1, static_cast<float>(white.y));
    EXPECT_FLOAT_EQ(out.boxes[0].x2, static_cast<float>(white.x + white.width));
    EXPECT_FLOAT_EQ(out.boxes[0].y2, static_cast<float>(white.y + white.height));
}

// A scale-and-translate affine is a resize of warp_as_resize's rectangle: the part past the
// image is border, the pixels are those of cv::warpAffine with the same matrix within a few levels
// (inside the outer ring), and the boxes follow that matrix.
TEST(Affine, ScaleAndTranslateIsAResizeWithBorderPastTheImage) {
    SynthOptions so;
    so.imgsz = 96;
    const SynthSample sample = make_synth_sample(so, "train", 2);
    LabeledImage in = resize_long_side(sample.image, sample.boxes, 96);
    AugmentOptions o;
    for (const cv::Matx33d& M :
         {translate_scale(20.3, -7.6, 0.83), translate_scale(-31.2, 12.9, 1.37)}) {
        const std::optional<ResizeWarp> r = warp_as_resize(M, 96, 96);
        ASSERT_TRUE(r.has_value());
        ASSERT_NE(r->source & cv::Rect(0, 0, 96, 96), r->source) << "reaches past the image";
        const LabeledImage out = apply_affine(in, M, 96, 96, M(0, 0), o);
        cv::Mat warped;
        const cv::Matx33d& R = r->matrix;
        cv::warpAffine(
            in.image, warped, cv::Mat(cv::Matx23d(R(0, 0), 0, R(0, 2), 0, R(1, 1), R(1, 2))),
            cv::Size(96, 96), cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar::all(o.pad_value));
        const cv::Rect inner(1, 1, 94, 94);
        EXPECT_LE(cv::norm(out.image(inner), warped(inner), cv::NORM_INF), 8);
        EXPECT_LT(cv::norm(out.image(inner), warped(inner), cv::NORM_L1) / (3.0 * inner.area()),
                  0.5);
        const auto expected = transform_boxes(in.boxes, R, 96, 96, M(0, 0), o);
        ASSERT_EQ(out.boxes.size(), expected.size());
        for (std::size_t k = 0; k < expected.size(); ++k)
            EXPECT_FLOAT_EQ(out.boxes[k].x1, expected[k].x1);
    }
}

TEST(Affine, RotationTakesTheEnclosingBoxOfTheCorners) {
    AugmentOptions o;
    // 90 degrees about (50, 50): (x, y) -> (100 - y, x) in this matrix's convention.
    const cv::Matx33d M(0, -1, 100, 1, 0, 0, 0, 0, 1);
    const auto out = transform_boxes({pbox(0, 10, 20, 30, 60)}, M, 100, 100, 1, o);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FLOAT_EQ(out[0].x1, 40);
    EXPECT_FLOAT_EQ(out[0].x2, 80);
    EXPECT_FLOAT_EQ(out[0].y1, 10);
    EXPECT_FLOAT_EQ(out[0].y2, 30);
}

TEST(Affine, CandidateFilterDropsTinyClippedAndThinBoxes) {
    AugmentOptions o;
    const cv::Matx33d I = cv::Matx33d::eye();
    const auto out = transform_boxes(
        {
            pbox(0, 10, 10, 40, 40),     // kept
            pbox(1, 10, 10, 12, 40),     // 2 px wide: not > 2
            pbox(2, -95, 10, 5, 40),     // 95 % outside: area ratio 0.05 after clipping
            pbox(3, 0, 0, 99.5f, 2.5f),  // ~40:1 aspect, 2.5 px: kept (all limits met)
            pbox(4, 0, 50, 100, 50.9f),  // 0.9 px tall
        },
        I, 100, 100, 1, o);
    std::vector<int> kept;
    for (const auto& b : out)
        kept.push_back(b.cls);
    EXPECT_EQ(kept, (std::vector<int>{0, 3}));
    // Aspect ratio >= 100 is dropped even when big enough.
    const auto thin = transform_boxes({pbox(5, 0, 0, 1000, 9.9f)}, I, 1000, 1000, 1, o);
    EXPECT_TRUE(thin.empty());
    // Scaling down by 0.5 with scale=0.5 keeps the area ratio at 1.
    const auto half =
        transform_boxes({pbox(6, 10, 10, 40, 40)}, translate_scale(0, 0, 0.5), 100, 100, 0.5, o);
    EXPECT_EQ(half.size(), 1u);
}

TEST(Flip, HorizontalAndVerticalMovePixelsAndBoxes) {
    LabeledImage img;
    img.image = cv::Mat(20, 30, CV_8UC3, cv::Scalar(0, 0, 0));
    img.image.at<cv::Vec3b>(2, 3) = cv::Vec3b(1, 2, 3);
    img.boxes = {pbox(0, 3, 2, 4, 3)};
    LabeledImage h = img;
    h.image = img.image.clone();
    flip_horizontal(h);
    EXPECT_EQ(h.image.at<cv::Vec3b>(2, 26), cv::Vec3b(1, 2, 3));
    EXPECT_FLOAT_EQ(h.boxes[0].x1, 26);
    EXPECT_FLOAT_EQ(h.boxes[0].x2, 27);
    EXPECT_FLOAT_EQ(h.boxes[0].y1, 2);
    LabeledImage v = img;
    v.image = img.image.clone();
    flip_vertical(v);
    EXPECT_EQ(v.image.at<cv::Vec3b>(17, 3), cv::Vec3b(1, 2, 3));
    EXPECT_FLOAT_EQ(v.boxes[0].y1, 17);
    EXPECT_FLOAT_EQ(v.boxes[0].y2, 18);
    flip_horizontal(h);
    EXPECT_EQ(cv::norm(h.image, img.image, cv::NORM_INF), 0);
    EXPECT_FLOAT_EQ(h.boxes[0].x1, 3);
}

TEST(Letterbox, KeepsAspectCentresAndPads) {
    LabeledImage in;
    in.image = cv::Mat(100, 200, CV_8UC3, cv::Scalar(10, 20, 30));
    in.boxes = {pbox(0, 0, 0, 200, 100), pbox(1, 50, 25, 100, 75)};
    LetterboxInfo info;
    const auto out = letterbox(in, 64, 64, 114, true, &info);
    EXPECT_EQ(out.image.size(), cv::Size(64, 64));
    EXPECT_DOUBLE_EQ(info.scale, 0.32);
    EXPECT_EQ(info.pad_left, 0);
    EXPECT_EQ(info.pad_top, 16);
    EXPECT_EQ(out.image.at<cv::Vec3b>(0, 10), cv::Vec3b(114, 114, 114));
    EXPECT_EQ(out.image.at<cv::Vec3b>(63, 10), cv::Vec3b(114, 114, 114));
    EXPECT_EQ(out.image.at<cv::Vec3b>(16, 10), cv::Vec3b(10, 20, 30));
    EXPECT_EQ(out.image.at<cv::Vec3b>(47, 10), cv::Vec3b(10, 20, 30));
    EXPECT_FLOAT_EQ(out.boxes[0].y1, 16);
    EXPECT_FLOAT_EQ(out.boxes[0].y2, 48);
    EXPECT_FLOAT_EQ(out.boxes[0].x2, 64);
    EXPECT_FLOAT_EQ(out.boxes[1].x1, 16);
    EXPECT_FLOAT_EQ(out.boxes[1].y1, 24);
    // scaleup=false never enlarges: a small image is centred at scale 1.
    LabeledImage small;
    small.image = cv::Mat(10, 20, CV_8UC3, cv::Scalar(1, 1, 1));
    small.boxes = {pbox(0, 0, 0, 20, 10)};
    const auto s2 = letterbox(small, 64, 64, 114, false, &info);
    EXPECT_DOUBLE_EQ(info.scale, 1.0);
    EXPECT_EQ(info.pad_left, 22);
    EXPECT_EQ(info.pad_top, 27);
    EXPECT_FLOAT_EQ(s2.boxes[0].x1, 22);
    EXPECT_FLOAT_EQ(s2.boxes[0].y2, 37);
}

TEST(Mosaic, BoxesStayOnTheCanvasAndCoverTheirObjects) {
    // Object ids ride in the class field and in the pixels of an id image, so every visible
    // object pixel can be checked against its own box.
    SynthOptions so;
    so.imgsz = 64;
    so.classes = 5;
    so.seed = 5;
    for (std::uint64_t trial = 0; trial < 12; ++trial) {
        LabeledImage ids[4];
        int next_id = 1;
        for (int k = 0; k < 4; ++k) {
            const SynthSample s =
                make_synth_sample(so, "train", static_cast<int>(trial * 4 + k), true);
            cv::Mat id16 = s.instances.clone();
            std::vector<Box> boxes = s.boxes;
            for (std::size_t j = 0; j < boxes.size(); ++j) {
                boxes[j].cls = next_id;
                id16.setTo(next_id, s.instances == static_cast<int>(j + 1));
                ++next_id;
            }
            cv::Mat id8;
            id16.convertTo(id8, CV_8U);
            cv::cvtColor(id8, ids[k].image, cv::COLOR_GRAY2BGR);
            ids[k].boxes = to_pixel_boxes(boxes, id8.cols, id8.rows);
        }
        const LabeledImage* ptrs[4] = {&ids[0], &ids[1], &ids[2], &ids[3]};
        Rng rng(trial);
        const auto m = mosaic4(ptrs, 64, 0, rng);
        ASSERT_EQ(m.image.size(), cv::Size(128, 128));
        cv::Mat canvas;
        cv::extractChannel(m.image, canvas, 0);
        std::map<int, PixelBox> by_id;
        for (const auto& b : m.boxes) {
            EXPECT_GE(b.x1, 0);
            EXPECT_GE(b.y1, 0);
            EXPECT_LE(b.x2, 128);
            EXPECT_LE(b.y2, 128);
            EXPECT_LT(b.x1, b.x2);
            EXPECT_LT(b.y1, b.y2);
            by_id[b.cls] = b;
        }
        for (int id = 1; id < next_id; ++id) {
            const cv::Rect r = cv::boundingRect(canvas == id);
            if (r.area() == 0) continue;  // cropped away
            ASSERT_TRUE(by_id.count(id)) << "visible object " << id << " has no box";
            const PixelBox& b = by_id[id];
            EXPECT_GE(r.x, b.x1);
            EXPECT_GE(r.y, b.y1);
            EXPECT_LE(r.x + r.width, b.x2);
            EXPECT_LE(r.y + r.height, b.y2);
        }
    }
}

TEST(Hsv, ZeroGainsChangeNothingGreyStaysGreyAndSeedRepeats) {
    SynthOptions so;
    so.imgsz = 64;
    const cv::Mat src = make_synth_sample(so, "train", 0).image;
    cv::Mat a = src.clone();
    Rng r0(1);
    augment_hsv(a, 0, 0, 0, r0);
    EXPECT_EQ(cv::norm(a, src, cv::NORM_INF), 0);
    cv::Mat b = src.clone(), c = src.clone();
    Rng r1(9), r2(9);
    augment_hsv(b, 0.015, 0.7, 0.4, r1);
    augment_hsv(c, 0.015, 0.7, 0.4, r2);
    EXPECT_EQ(cv::norm(b, c, cv::NORM_INF), 0);
    EXPECT_GT(cv::norm(b, src, cv::NORM_INF), 0);
    cv::Mat grey(8, 8, CV_8UC3, cv::Scalar(114, 114, 114));
    Rng r3(4);
    augment_hsv(grey, 0.015, 0.7, 0.4, r3);
    const cv::Vec3b g = grey.at<cv::Vec3b>(3, 3);
    EXPECT_EQ(g[0], g[1]);
    EXPECT_EQ(g[1], g[2]);
}

// The HSV step as the reference writes it (BGR->HSV, one 256-entry table per channel through
// cv::LUT on the split planes, HSV->BGR) equals apply_hsv_gains_opencv's own table loop, on a
// whole image and on a view into a wider one (rows not continuous), whose pixels outside stay
// untouched. (The one-pass path is checked against it in hsv_test.cpp.)
TEST(Hsv, OpenCvPathEqualsPerChannelCvLutOnWholeImagesAndViews) {
    cv::Mat wide(41, 67, CV_8UC3);
    cv::randu(wide, cv::Scalar::all(0), cv::Scalar::all(256));
    for (const cv::Mat& src : {wide, wide(cv::Rect(5, 3, 29, 31))}) {
        for (std::uint64_t seed : {1u, 2u, 3u}) {
            Rng draw(seed);
            const HsvGains gains = draw_hsv_gains(0.5, 0.7, 0.4, draw);
            cv::Mat lut[3] = {cv::Mat(1, 256, CV_8U), cv::Mat(1, 256, CV_8U),
                              cv::Mat(1, 256, CV_8U)};
            for (int x = 0; x < 256; ++x) {
                lut[0].at<uchar>(x) = static_cast<uchar>(std::fmod(x * gains.hue, 180.0));
                lut[1].at<uchar>(x) =
                    static_cast<uchar>(std::clamp(x * gains.saturation, 0.0, 255.0));
                lut[2].at<uchar>(x) = static_cast<uchar>(std::clamp(x * gains.value, 0.0, 255.0));
            }
            cv::Mat hsv, planes[3], expected;
            cv::cvtColor(src, hsv, cv::COLOR_BGR2HSV);
            cv::split(hsv, planes);
            for (int c = 0; c < 3; ++c)
                cv::LUT(planes[c], lut[c], planes[c]);
            cv::merge(planes, 3, hsv);
            cv::cvtColor(hsv, expected, cv::COLOR_HSV2BGR);

            cv::Mat host = wide.clone();
            cv::Mat got = src.isContinuous() ? host : host(cv::Rect(5, 3, 29, 31));
            apply_hsv_gains_opencv(got, gains);
            EXPECT_EQ(cv::norm(got, expected, cv::NORM_INF), 0) << "seed " << seed;
            if (!src.isContinuous()) {
                host(cv::Rect(5, 3, 29, 31)).setTo(0);
                cv::Mat outside = wide.clone();
                outside(cv::Rect(5, 3, 29, 31)).setTo(0);
                EXPECT_EQ(cv::norm(host, outside, cv::NORM_INF), 0) << "seed " << seed;
            }
        }
    }
}

TEST(Train, CloseMosaicSwitchesMosaicOffForTheLastEpochs) {
    AugmentOptions o;
    EXPECT_TRUE(mosaic_active(o, 0, 100));
    EXPECT_TRUE(mosaic_active(o, 89, 100));
    EXPECT_FALSE(mosaic_active(o, 90, 100));
    // Runs no longer than close_mosaic (10): the reference closes mosaic at epoch epochs - 10,
    // which a shorter run never reaches, and at once when epochs == 10.
    EXPECT_TRUE(mosaic_active(o, 0, 3));
    EXPECT_TRUE(mosaic_active(o, 2, 3));
    EXPECT_FALSE(mosaic_active(o, 0, 10));
    EXPECT_TRUE(mosaic_active(o, 0, 11));
    EXPECT_FALSE(mosaic_active(o, 1, 11));
    o.close_mosaic = 0;
    EXPECT_TRUE(mosaic_active(o, 99, 100));
    o.mosaic = 0;
    EXPECT_FALSE(mosaic_active(o, 0, 100));
    o.scale = 2;
    EXPECT_THROW(validate_augment_options(o), InputError);
}

TEST(Train, FullTransformIsSeededAndKeepsBoxesInside) {
    SynthOptions so;
    so.imgsz = 96;
    so.classes = 4;
    std::vector<LabeledImage> resized;
    for (int i = 0; i < 6; ++i) {
        const SynthSample s = make_synth_sample(so, "train", i);
        resized.push_back(resize_long_side(s.image, s.boxes, 64));
    }
    const SampleSource load = [&](std::int64_t i, LabeledImage& out) {
        if (i == 5) return false;  // a bad image
        out = resized[static_cast<std::size_t>(i)];
        return true;
    };
    AugmentOptions o;
    o.imgsz = 64;
    const std::vector<std::int64_t> all = {0, 1, 2, 3, 4, 5};
    int with_boxes = 0;
    for (bool mosaic : {true, false}) {
        for (int i = 0; i < 5; ++i) {
            Rng a(100 + i), b(100 + i);
            const auto x = augment_train_sample(i, all, load, o, mosaic, a);
            const auto y = augment_train_sample(i, all, load, o, mosaic, b);
            ASSERT_EQ(x.image.size(), cv::Size(64, 64));
            EXPECT_EQ(cv::norm(x.image, y.image, cv::NORM_INF), 0);
            ASSERT_EQ(x.boxes.size(), y.boxes.size());
            for (const auto& bx : x.boxes) {
                EXPECT_GE(bx.x1, 0);
                EXPECT_LE(bx.x2, 64);
                EXPECT_GE(bx.y1, 0);
                EXPECT_LE(bx.y2, 64);
                EXPECT_GT(bx.x2 - bx.x1, 2);
            }
            with_boxes += !x.boxes.empty();
        }
        Rng r(1);
        EXPECT_TRUE(augment_train_sample(5, all, load, o, mosaic, r).image.empty());
    }
    EXPECT_GT(with_boxes, 5);
    // The resized source images were never written into.
    const SynthSample s0 = make_synth_sample(so, "train", 0);
    EXPECT_EQ(
        cv::norm(resize_long_side(s0.image, s0.boxes, 64).image, resized[0].image, cv::NORM_INF),
        0);
}

TEST(Train, MosaicPartnersAreDrawnFromTheGivenPool) {
    SynthOptions so;
    so.imgsz = 64;
    const SynthSample s = make_synth_sample(so, "train", 0);
    const LabeledImage resized = resize_long_side(s.image, s.boxes, 64);
    std::set<std::int64_t> loaded;
    const SampleSource load = [&](std::int64_t i, LabeledImage& out) {
        loaded.insert(i);
        out = resized;
        return true;
    };
    AugmentOptions o;
    o.imgsz = 64;
    o.mosaic = 1.0;
    const std::vector<std::int64_t> pool = {7, 9};
    for (std::uint64_t seed = 0; seed < 8; ++seed) {
        Rng rng(seed);
        augment_train_sample(3, pool, load, o, /*use_mosaic=*/true, rng);
    }
    EXPECT_EQ(loaded, (std::set<std::int64_t>{3, 7, 9}));
    loaded.clear();
    Rng rng(1);
    augment_train_sample(3, {}, load, o, /*use_mosaic=*/true, rng);  // no pool: itself
    EXPECT_EQ(loaded, std::set<std::int64_t>{3});
}

// warp_as_resize moves no output pixel's sample point by more than 3/4 of an input pixel (the
// middle one's by at most half), and declines any other warp.
TEST(Mosaic, ResizeWarpSamplesWithinThreeQuartersOfAPixelOfTheDrawnMatrix) {
    AugmentOptions o;
    for (std::uint64_t seed = 0; seed < 200; ++seed) {
        Rng rng(seed);
        const cv::Matx33d M = random_affine_matrix(o, 1280, 1280, 640, 640, rng);
        const std::optional<ResizeWarp> r = warp_as_resize(M, 640, 640);
        ASSERT_TRUE(r.has_value()) << "seed " << seed;
        for (int axis = 0; axis < 2; ++axis) {
            const auto sample = [axis](const cv::Matx33d& m, double x) {
                return (x - m(axis, 2)) / m(axis, axis);
            };
            for (double x : {0.0, 319.5, 639.0})
                EXPECT_LE(std::abs(sample(r->matrix, x) - sample(M, x)), x == 319.5 ? 0.5 : 0.75)
                    << "seed " << seed << " x " << x;
            // The resize's own mapping of its rectangle.
            const double width = r->source.size().width;
            EXPECT_NEAR(sample(r->matrix, 0),
                        (axis == 0 ? r->source.x : r->source.y) + 0.5 * width / 640 - 0.5, 1e-9);
        }
        // Shifted to its rectangle's origin, its own matrix gives back the whole rectangle.
        cv::Matx33d shift = cv::Matx33d::eye();
        shift(0, 2) = r->source.x;
        shift(1, 2) = r->source.y;
        const std::optional<ResizeWarp> again = warp_as_resize(r->matrix * shift, 640, 640);
        ASSERT_TRUE(again.has_value());
        EXPECT_EQ(again->source, cv::Rect(cv::Point(0, 0), r->source.size())) << "seed " << seed;
        EXPECT_LT(cv::norm(cv::Mat(again->matrix - r->matrix * shift), cv::NORM_INF), 1e-9);
        EXPECT_EQ(r->source.width, r->source.height);
        EXPECT_EQ(r->matrix(0, 1), 0);
        EXPECT_EQ(r->matrix(2, 2), 1);
    }
    o.degrees = 5;
    Rng rng(1);
    EXPECT_FALSE(warp_as_resize(random_affine_matrix(o, 1280, 1280, 640, 640, rng), 640, 640));
    cv::Matx33d projective = cv::Matx33d::eye();
    projective(2, 0) = 1e-4;
    EXPECT_FALSE(warp_as_resize(projective, 640, 640));
    EXPECT_FALSE(warp_as_resize(cv::Matx33d(-1, 0, 0, 0, 1, 0, 0, 0, 1), 640, 640));
}

TEST(Mosaic, PartialCanvasWarpMatchesFullCanvasWarp) {
    SynthOptions so;
    so.imgsz = 64;
    so.classes = 6;
    std::vector<LabeledImage> imgs;
    for (int i = 0; i < 4; ++i) {
        const SynthSample s = make_synth_sample(so, "train", i);
        imgs.push_back(resize_long_side(s.image, s.boxes, 64));
    }
    const LabeledImage* ptrs[4] = {&imgs[0], &imgs[1], &imgs[2], &imgs[3]};
    AugmentOptions o;
    o.imgsz = 64;
    for (int trial = 0; trial < 20; ++trial) {
        o.degrees = trial % 2 ? 10 : 0;
        o.shear = trial % 3 ? 0 : 5;
        Rng a(trial), b(trial);
        const LabeledImage fused = mosaic_affine(ptrs, o, a);
        const LabeledImage canvas = mosaic4(ptrs, 64, o.pad_value, b);
        double sc = 1;
        const cv::Matx33d M = random_affine_matrix(o, 128, 128, 64, 64, b, &sc);
        const std::optional<ResizeWarp> resize = warp_as_resize(M, 64, 64);
        EXPECT_EQ(resize.has_value(), o.degrees == 0 && o.shear == 0) << "trial " << trial;
        const LabeledImage full = apply_affine(canvas, M, 64, 64, sc, o);
        ASSERT_EQ(fused.image.size(), full.image.size());
        if (resize) {
            // Both resize the same rectangle: the same pixels.
            EXPECT_EQ(cv::norm(fused.image, full.image, cv::NORM_INF), 0) << "trial " << trial;
            // And the resize against cv::warpAffine of its matrix (1/32-pixel coordinates): a
            // few levels at sharp edges; the resize repeats its rectangle's last pixel where the
            // warp would blend in the next one, so the outer ring of pixels is left out.
            cv::Mat warped;
            const cv::Matx33d& R = resize->matrix;
            cv::warpAffine(
                canvas.image, warped,
                cv::Mat(cv::Matx23d(R(0, 0), R(0, 1), R(0, 2), R(1, 0), R(1, 1), R(1, 2))),
                cv::Size(64, 64), cv::INTER_LINEAR, cv::BORDER_CONSTANT,
                cv::Scalar::all(o.pad_value));
            const cv::Rect inner(1, 1, 62, 62);
            EXPECT_LE(cv::norm(fused.image(inner), warped(inner), cv::NORM_INF), 8)
                << "trial " << trial;
            EXPECT_LT(
                cv::norm(fused.image(inner), warped(inner), cv::NORM_L1) / (3.0 * inner.area()),
                0.5)
                << "trial " << trial;
        } else {
            // Same pixels up to fixed-point rounding of the shifted matrix.
            EXPECT_LE(cv::norm(fused.image, full.image, cv::NORM_INF), 1) << "trial " << trial;
        }
        ASSERT_EQ(fused.boxes.size(), full.boxes.size());
        for (std::size_t k = 0; k < full.boxes.size(); ++k) {
            EXPECT_EQ(fused.boxes[k].cls, full.boxes[k].cls);
            EXPECT_FLOAT_EQ(fused.boxes[k].x1, full.boxes[k].x1);
            EXPECT_FLOAT_EQ(fused.boxes[k].y2, full.boxes[k].y2);
        }
        EXPECT_EQ(a.next_u64(), b.next_u64());  // same number of draws
    }
}

namespace {

LabeledImage solid(int width, int height, int level) {
    LabeledImage im;
    im.image = cv::Mat(height, width, CV_8UC3, cv::Scalar::all(level));
    return im;
}

}  // namespace

// The canvas is written row by row, pad only where no image lands: with images of one level each,
// every pixel is the pad or an image's level, and each image's pixels form one rectangle at its
// corner of the centre.
TEST(Mosaic, EveryCanvasPixelIsThePadOrItsImage) {
    const LabeledImage parts[4] = {solid(40, 30, 10), solid(64, 20, 20), solid(25, 64, 30),
                                   solid(64, 64, 40)};
    const LabeledImage* ptrs[4] = {&parts[0], &parts[1], &parts[2], &parts[3]};
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
        Rng rng(seed);
        const LabeledImage m = mosaic4(ptrs, 64, 114, rng);
        ASSERT_EQ(m.image.size(), cv::Size(128, 128));
        cv::Mat level;
        cv::extractChannel(m.image, level, 0);
        cv::Rect rects[4];
        int covered = 0;
        for (int k = 0; k < 4; ++k) {
            const cv::Mat mine = level == 10 * (k + 1);
            rects[k] = cv::boundingRect(mine);
            EXPECT_EQ(cv::countNonZero(mine), rects[k].area()) << "image " << k << " seed " << seed;
            covered += rects[k].area();
        }
        EXPECT_EQ(cv::countNonZero(level == 114) + covered, 128 * 128) << "seed " << seed;
        // Left images end where right ones start, top ones where bottom ones start.
        EXPECT_EQ(rects[0].br().x, rects[1].x) << "seed " << seed;
        EXPECT_EQ(rects[2].br().x, rects[3].x) << "seed " << seed;
        EXPECT_EQ(rects[0].br().y, rects[2].y) << "seed " << seed;
        EXPECT_EQ(rects[1].br().y, rects[3].y) << "seed " << seed;
    }
}

// The loader builds its canvas in per-thread scratch memory: whatever an earlier sample left
// there must not show through.
TEST(Mosaic, TheScratchCanvasLeavesNothingOfTheSampleBefore) {
    AugmentOptions o;
    o.imgsz = 64;
    const LabeledImage small[4] = {solid(40, 30, 10), solid(50, 20, 20), solid(25, 44, 30),
                                   solid(30, 30, 40)};
    const LabeledImage* ptrs[4] = {&small[0], &small[1], &small[2], &small[3]};
    for (const int before_level : {0, 255}) {
        const LabeledImage big[4] = {solid(64, 64, before_level), solid(64, 64, before_level),
                                     solid(64, 64, before_level), solid(64, 64, before_level)};
        const LabeledImage* before[4] = {&big[0], &big[1], &big[2], &big[3]};
        for (std::uint64_t seed = 0; seed < 10; ++seed) {
            Rng prime(seed + 100), a(seed), b(seed);
            o.scale = 0.9;  // small and large canvas regions
            mosaic_affine(before, o, prime);
            const LabeledImage after_other = mosaic_affine(ptrs, o, a);
            std::thread fresh([&] {
                const LabeledImage alone = mosaic_affine(ptrs, o, b);
                EXPECT_EQ(cv::norm(after_other.image, alone.image, cv::NORM_INF), 0)
                    << "seed " << seed << ", level before " << before_level;
            });
            fresh.join();
        }
    }
}
