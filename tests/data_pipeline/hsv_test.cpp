// The one-pass HSV jitter (core/data/augment/hsv_simd.h): against the formula it states, worked in
// double precision here; against OpenCV's conversion pair, the reference's way; on views.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <opencv2/core.hpp>

#include "core/data/augment/augment.h"
#include "core/data/augment/hsv_simd.h"
#include "core/data/augment/random.h"
#include "core/data/synth/synth.h"

using namespace crucible::data;

namespace {

bool one_pass_runs_here() {
    std::uint8_t pixel[3] = {10, 20, 30};
    return hsv_gains_avx2(pixel, 1, HsvGains{});
}

bool avx512_runs_here() {
    std::uint8_t pixel[3] = {10, 20, 30};
    return hsv_gains_avx512(pixel, 1, HsvGains{});
}

#define SKIP_WITHOUT_ONE_PASS()                                                             \
    if (!one_pass_runs_here())                                                              \
    GTEST_SKIP() << "this CPU has no AVX2 and FMA, so apply_hsv_gains takes OpenCV's path " \
                    "(tested in augment_test.cpp)"

// hsv_simd.h's formula for one pixel in double precision, with the gains rounded to float as the
// fast path takes them.
cv::Vec3b formula(cv::Vec3b bgr, const HsvGains& gains) {
    const double gh = static_cast<float>(gains.hue), gs = static_cast<float>(gains.saturation),
                 gv = static_cast<float>(gains.value);
    const double b = bgr[0], g = bgr[1], r = bgr[2];
    const double v = std::max({b, g, r}), c = v - std::min({b, g, r});
    double h = 0;
    if (c > 0) h = v == r ? (g - b) / c : v == g ? 2 + (b - r) / c : 4 + (r - g) / c;
    if (h < 0) h += 6;
    h *= gh;
    h -= 6 * std::floor(h / 6);
    // V * gain rounded to float, as the fast path's product is (exact in double, then rounded
    // once): which side of an integer it lands on decides the floor.
    const double value = std::floor(std::min(double{static_cast<float>(v * gv)}, 255.0));
    const double chroma = v > 0 ? value * std::min(c / v * gs, 1.0) : 0;
    cv::Vec3b out;
    const double n_of_channel[3] = {1, 3, 5};  // blue, green, red
    for (int k = 0; k < 3; ++k) {
        const double t = std::fmod(n_of_channel[k] + h, 6);
        const double share = std::clamp(std::min(t, 4 - t), 0.0, 1.0);
        out[k] = static_cast<std::uint8_t>(std::nearbyint(value - chroma * share));
    }
    return out;
}

cv::Mat every_colour() {
    cv::Mat all(4096, 4096, CV_8UC3);
    for (int i = 0; i < 4096 * 4096; ++i)
        all.at<cv::Vec3b>(i / 4096, i % 4096) =
            cv::Vec3b(static_cast<std::uint8_t>(i & 255), static_cast<std::uint8_t>(i >> 8 & 255),
                      static_cast<std::uint8_t>(i >> 16));
    return all;
}

// Random pixels, with a share of greys, pure and saturated colours and the extremes.
cv::Mat hostile_pixels(int side, std::uint64_t seed) {
    cv::Mat image(side, side, CV_8UC3);
    cv::randu(image, cv::Scalar::all(0), cv::Scalar::all(256));
    Rng rng(seed);
    const std::uint8_t levels[] = {0, 1, 127, 128, 254, 255};
    for (int i = 0; i < side * side; i += 3) {
        auto& p = image.at<cv::Vec3b>(i / side, i % side);
        for (int k = 0; k < 3; ++k)
            p[k] = levels[rng.uniform_int(0, 5)];
        if (i % 7 == 0) p[1] = p[2] = p[0];  // grey
    }
    return image;
}

struct Difference {
    double max_abs = 0, mean_abs = 0, mean_signed[3] = {0, 0, 0};
};

Difference difference(const cv::Mat& a, const cv::Mat& b) {
    Difference d;
    const auto n = static_cast<double>(a.total());
    for (int y = 0; y < a.rows; ++y)
        for (int x = 0; x < a.cols; ++x)
            for (int k = 0; k < 3; ++k) {
                const double e = a.at<cv::Vec3b>(y, x)[k] - b.at<cv::Vec3b>(y, x)[k];
                d.max_abs = std::max(d.max_abs, std::abs(e));
                d.mean_abs += std::abs(e) / (3 * n);
                d.mean_signed[k] += e / n;
            }
    return d;
}

}  // namespace

TEST(HsvOnePass, GainsOfOneGiveBackEveryOneOfTheSixteenMillionColours) {
    SKIP_WITHOUT_ONE_PASS();
    const cv::Mat all = every_colour();
    cv::Mat out = all.clone();
    ASSERT_TRUE(hsv_gains_avx2(out.data, static_cast<std::int64_t>(out.total()), HsvGains{}));
    EXPECT_EQ(cv::norm(out, all, cv::NORM_INF), 0);
}

namespace {

using OnePass = bool (*)(std::uint8_t*, std::int64_t, HsvGains);

// `wide` on every colour (but a tail of 11) against the AVX2 path, with two sets of gains.
void expect_the_bits_of_avx2(OnePass wide_pass) {
    const cv::Mat all = every_colour();
    for (const HsvGains& gains : {HsvGains{1.01, 1.6, 0.7}, HsvGains{1.9, 0.2, 1.8}}) {
        cv::Mat wide = all.clone(), narrow = all.clone();
        const auto n = static_cast<std::int64_t>(all.total()) - 5;
        ASSERT_TRUE(wide_pass(wide.data, n, gains));
        ASSERT_TRUE(hsv_gains_avx2(narrow.data, n, gains));
        EXPECT_EQ(cv::norm(wide, narrow, cv::NORM_INF), 0) << "hue gain " << gains.hue;
        EXPECT_GT(cv::norm(wide, all, cv::NORM_INF), 0);
    }
}

}  // namespace

// Whichever of the sets the CPU has, a run's augmented pixels are the same.
TEST(HsvOnePass, AvxFiveTwelveGivesTheSameBitsAsAvx2OnEveryColour) {
    if (!avx512_runs_here()) GTEST_SKIP() << "this CPU has no AVX-512F: only AVX2 runs here";
    expect_the_bits_of_avx2(hsv_gains_avx512);
}

// The VBMI path moves bytes differently and masks its loads and stores instead of padding the
// tail: the same bits again, for every tail length, and nothing written past the pixels given.
TEST(HsvOnePass, VbmiGivesTheSameBitsAsAvx2OnEveryColourAndEveryTail) {
    std::uint8_t probe[3] = {10, 20, 30};
    if (!hsv_gains_avx512_vbmi(probe, 1, HsvGains{}))
        GTEST_SKIP() << "this CPU has no AVX-512 VBMI: the 128-bit shuffle paths run here";
    expect_the_bits_of_avx2(hsv_gains_avx512_vbmi);
    const HsvGains gains{1.3, 1.5, 0.8};
    for (int count = 1; count <= 40; ++count) {
        std::vector<std::uint8_t> wide(3 * 48, 7), narrow(3 * 48, 7);
        for (int i = 0; i < 3 * count; ++i)
            wide[static_cast<std::size_t>(i)] = narrow[static_cast<std::size_t>(i)] =
                static_cast<std::uint8_t>(37 * i + 11);
        ASSERT_TRUE(hsv_gains_avx512_vbmi(wide.data(), count, gains));
        ASSERT_TRUE(hsv_gains_avx2(narrow.data(), count, gains));
        EXPECT_EQ(wide, narrow) << count << " pixels";
        for (std::size_t i = static_cast<std::size_t>(3 * count); i < wide.size(); ++i)
            ASSERT_EQ(wide[i], 7) << "byte " << i << " past " << count << " pixels was written";
    }
}

// Hue gains over the whole range the options allow (0 to 2: the hue wraps past red), saturation
// to grey and beyond full, value to black and past white.
TEST(HsvOnePass, ComesWithinOneLevelOfItsFormulaInDoublePrecision) {
    SKIP_WITHOUT_ONE_PASS();
    const HsvGains cases[] = {{1.015, 1.7, 1.4}, {0.985, 0.3, 0.6}, {2.0, 1.0, 1.0},
                              {0.0, 0.0, 1.0},   {1.0, 2.0, 2.0},   {1.37, 1.0, 0.0},
                              {0.5, 0.9, 1.1}};
    for (const HsvGains& gains : cases) {
        const cv::Mat src = hostile_pixels(512, 3);
        cv::Mat got = src.clone();
        apply_hsv_gains(got, gains);  // AVX-512 where the CPU has it
        cv::Mat expected(src.size(), CV_8UC3);
        for (int y = 0; y < src.rows; ++y)
            for (int x = 0; x < src.cols; ++x)
                expected.at<cv::Vec3b>(y, x) = formula(src.at<cv::Vec3b>(y, x), gains);
        const Difference d = difference(got, expected);
        EXPECT_LE(d.max_abs, 1) << "gains " << gains.hue << " " << gains.saturation << " "
                                << gains.value;
        // Off by one only where the exact result lies within float error of a half level.
        EXPECT_LT(d.mean_abs, 0.005) << "gains " << gains.hue << " " << gains.saturation << " "
                                     << gains.value << " " << d.max_abs << " " << d.mean_abs;
    }
}

// The reference's way quantises hue to 2 degrees and saturation to 1/255 and truncates both
// after the gains, so its pixels sit up to about 1.5 hue steps from the exact result: a strongly
// coloured channel differs by up to 255 / 20 levels. On average the two give the same colours.
// (A hue gain applied before red's negative side wraps, found by this test, moved whole shapes
// by 4 levels on average.)
TEST(HsvOnePass, AgreesWithOpenCvsConversionPairOnAverage) {
    SKIP_WITHOUT_ONE_PASS();
    SynthOptions so;
    so.imgsz = 256;
    for (std::uint64_t seed = 0; seed < 12; ++seed) {
        const cv::Mat photo = make_synth_sample(so, "train", static_cast<int>(seed)).image;
        const cv::Mat noise = hostile_pixels(256, seed);
        for (int kind = 0; kind < 2; ++kind) {
            const cv::Mat& src = kind == 0 ? photo : noise;
            Rng rng(seed);
            const HsvGains gains = draw_hsv_gains(0.015, 0.7, 0.4, rng);
            cv::Mat one_pass = src.clone(), opencv = src.clone();
            apply_hsv_gains(one_pass, gains);
            apply_hsv_gains_opencv(opencv, gains);
            const Difference d = difference(one_pass, opencv);
            const std::string where =
                "seed " + std::to_string(seed) + (kind == 0 ? " (synthetic photo)" : " (noise)");
            EXPECT_LE(d.max_abs, 17) << where;
            EXPECT_LT(d.mean_abs, 1.5) << where;
            for (double m : d.mean_signed)
                EXPECT_LT(std::abs(m), 2.5) << where;
        }
    }
}

// A view into a wider image (rows not continuous, 29 pixels a row: a tail of 13 after 16) gets
// the same pixels as a continuous copy of it, and nothing outside the view changes.
TEST(HsvOnePass, ViewsAndShortRowsGetTheSamePixelsAsAContinuousImage) {
    SKIP_WITHOUT_ONE_PASS();
    const cv::Mat wide = hostile_pixels(67, 5);
    const cv::Rect inside(5, 3, 29, 31);
    const HsvGains gains{1.01, 1.5, 0.8};
    cv::Mat expected = wide(inside).clone();
    ASSERT_TRUE(hsv_gains_avx2(expected.data, static_cast<std::int64_t>(expected.total()), gains));
    cv::Mat host = wide.clone();
    cv::Mat view = host(inside);
    apply_hsv_gains(view, gains);
    EXPECT_EQ(cv::norm(view, expected, cv::NORM_INF), 0);
    EXPECT_GT(cv::norm(view, wide(inside), cv::NORM_INF), 0);
    host(inside).setTo(0);
    cv::Mat outside = wide.clone();
    outside(inside).setTo(0);
    EXPECT_EQ(cv::norm(host, outside, cv::NORM_INF), 0);
}

// An empty image (a sample that failed to load) is left alone on every path.
TEST(HsvOnePass, EmptyImagesAreLeftAlone) {
    cv::Mat empty;
    EXPECT_NO_THROW(apply_hsv_gains(empty, HsvGains{1.01, 1.5, 0.8}));
    EXPECT_TRUE(empty.empty());
    cv::Mat no_rows(0, 16, CV_8UC3);
    EXPECT_NO_THROW(apply_hsv_gains(no_rows, HsvGains{1.01, 1.5, 0.8}));
}
