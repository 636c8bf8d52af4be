// The AVX-512 VBMI bilinear resize (core/data/augment/resize_simd.h): against the bilinear formula
// it states, worked in double precision; against cv::resize, which it stands in for; on views, at
// the edges, and where it must decline.
#include "core/data/augment/resize_simd.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <opencv2/imgproc.hpp>

using namespace crucible::data;

namespace {

// Scratch memory aligned as the function wants it.
class Scratch {
  public:
    explicit Scratch(int dst_width) : bytes_(bilinear_scratch_bytes(dst_width) + 63) {}
    void* get() { return bytes_.data() + (-reinterpret_cast<std::uintptr_t>(bytes_.data()) & 63); }

  private:
    std::vector<std::uint8_t> bytes_;
};

BgrPixels view_of(const cv::Mat& m) {
    return BgrPixels{m.data, m.cols, m.rows, m.step};
}

// False where this CPU lacks the instructions (nothing else declines a 2x2 -> 3x3 resize).
bool runs_here() {
    const cv::Mat src(2, 2, CV_8UC3, cv::Scalar(1, 2, 3));
    cv::Mat dst(3, 3, CV_8UC3);
    Scratch scratch(3);
    return resize_bgr_bilinear(view_of(src), dst.data, 3, 3, dst.step, scratch.get());
}

#define SKIP_WITHOUT_VBMI()                                                             \
    if (!runs_here())                                                                   \
    GTEST_SKIP() << "this CPU has no AVX-512BW and VBMI, so the training affine takes " \
                    "cv::resize (the augmentation tests cover that path)"

bool resize(const cv::Mat& src, cv::Mat& dst, cv::Size size) {
    dst.create(size, CV_8UC3);
    Scratch scratch(size.width);
    return resize_bgr_bilinear(view_of(src), dst.data, size.width, size.height, dst.step,
                               scratch.get());
}

// cv::resize's INTER_LINEAR mapping, clamped at the edges, in double precision.
void source_position(int x, int src, int dst, int& index, double& fraction) {
    const double p = (x + 0.5) * src / dst - 0.5;
    index = static_cast<int>(std::floor(p));
    fraction = p - index;
    if (index < 0) index = 0, fraction = 0;
    if (index >= src - 1) index = src - 1, fraction = 0;
}

cv::Mat exact_bilinear(const cv::Mat& src, cv::Size size) {
    cv::Mat out(size, CV_8UC3);
    for (int y = 0; y < size.height; ++y) {
        int y0;
        double fy;
        source_position(y, src.rows, size.height, y0, fy);
        const int y1 = std::min(y0 + 1, src.rows - 1);
        for (int x = 0; x < size.width; ++x) {
            int x0;
            double fx;
            source_position(x, src.cols, size.width, x0, fx);
            const int x1 = std::min(x0 + 1, src.cols - 1);
            for (int c = 0; c < 3; ++c) {
                const auto at = [&](int yy, int xx) {
                    return static_cast<double>(src.at<cv::Vec3b>(yy, xx)[c]);
                };
                const double top = at(y0, x0) * (1 - fx) + at(y0, x1) * fx;
                const double bottom = at(y1, x0) * (1 - fx) + at(y1, x1) * fx;
                out.at<cv::Vec3b>(y, x)[c] =
                    static_cast<std::uint8_t>(std::lround(top * (1 - fy) + bottom * fy));
            }
        }
    }
    return out;
}

// A view (its rows further apart than its width) into random pixels, smoothed or not.
cv::Mat random_view(cv::RNG& rng, int width, int height, bool smooth) {
    cv::Mat big(height + 3, width + 5, CV_8UC3);
    rng.fill(big, cv::RNG::UNIFORM, 0, 256);
    if (smooth) cv::GaussianBlur(big, big, cv::Size(5, 5), 1.0);
    return big(cv::Rect(2, 1, width, height));
}

}  // namespace

// The formula the header states, on noise (the hardest case for the 1/64-pixel weights: a weight
// off by 1/128 moves a value by up to 2 levels per pass): within 3 levels everywhere.
TEST(ResizeBilinear, ComesWithinThreeLevelsOfTheExactBilinearValue) {
    SKIP_WITHOUT_VBMI();
    cv::RNG rng(3);
    int compared = 0;
    for (int trial = 0; trial < 200; ++trial) {
        const int sw = rng.uniform(1, 200), sh = rng.uniform(1, 200);
        const cv::Size size(rng.uniform(1, 200), rng.uniform(1, 200));
        const cv::Mat src = random_view(rng, sw, sh, false);
        cv::Mat got;
        if (!resize(src, got, size)) continue;  // declined (checked below)
        ++compared;
        EXPECT_LE(cv::norm(got, exact_bilinear(src, size), cv::NORM_INF), 3)
            << sw << "x" << sh << " -> " << size;
    }
    EXPECT_GT(compared, 100);
}

// What it stands in for: cv::resize, on photo-like (smooth) pixels and at the training sizes.
TEST(ResizeBilinear, AgreesWithCvResize) {
    SKIP_WITHOUT_VBMI();
    cv::RNG rng(4);
    for (int trial = 0; trial < 100; ++trial) {
        const int sw = rng.uniform(1, 300), sh = rng.uniform(1, 300);
        const cv::Size size(rng.uniform(std::max(1, sw / 2 + 1), 400), rng.uniform(1, 400));
        const cv::Mat src = random_view(rng, sw, sh, true);
        cv::Mat got, want;
        ASSERT_TRUE(resize(src, got, size) || size == src.size())
            << sw << "x" << sh << " -> " << size;
        if (size == src.size()) continue;
        cv::resize(src, want, size, 0, 0, cv::INTER_LINEAR);
        EXPECT_LE(cv::norm(got, want, cv::NORM_INF), 2) << sw << "x" << sh << " -> " << size;
        EXPECT_LT(cv::norm(got, want, cv::NORM_L1) / (3.0 * size.area()), 0.3);
    }
    for (const int side : {320, 427, 512, 853, 1280}) {  // the mosaic's scales 0.5-1.5 at 640
        const cv::Mat src = random_view(rng, side, side, true);
        cv::Mat got, want;
        ASSERT_TRUE(resize(src, got, cv::Size(640, 640))) << side;
        cv::resize(src, want, cv::Size(640, 640), 0, 0, cv::INTER_LINEAR);
        EXPECT_LE(cv::norm(got, want, cv::NORM_INF), 2) << side;
    }
}

// Rows written exactly: nothing past the output's width in a wider buffer, nothing in other rows.
TEST(ResizeBilinear, WritesOnlyItsOutputPixels) {
    SKIP_WITHOUT_VBMI();
    cv::RNG rng(5);
    for (const int width : {1, 5, 15, 16, 17, 31, 33, 100}) {
        const cv::Mat src = random_view(rng, 40, 30, false);
        cv::Mat canvas(30, width + 20, CV_8UC3, cv::Scalar::all(77));
        cv::Mat dst = canvas(cv::Rect(3, 2, width, 25));
        Scratch scratch(width);
        ASSERT_TRUE(
            resize_bgr_bilinear(view_of(src), dst.data, width, 25, dst.step, scratch.get()));
        cv::Mat outside = canvas.clone();
        outside(cv::Rect(3, 2, width, 25)).setTo(cv::Scalar::all(77));
        EXPECT_EQ(cv::countNonZero(outside.reshape(1) != 77), 0) << "width " << width;
        EXPECT_LE(cv::norm(dst, exact_bilinear(src, dst.size()), cv::NORM_INF), 3);
    }
}

// One pixel stretched, and a single row or column: the edge pixel repeats.
TEST(ResizeBilinear, TheEdgePixelRepeats) {
    SKIP_WITHOUT_VBMI();
    const cv::Mat one(1, 1, CV_8UC3, cv::Scalar(10, 200, 30));
    cv::Mat got;
    ASSERT_TRUE(resize(one, got, cv::Size(37, 5)));
    EXPECT_EQ(cv::norm(got, cv::Mat(5, 37, CV_8UC3, cv::Scalar(10, 200, 30)), cv::NORM_INF), 0);
    cv::RNG rng(6);
    const cv::Mat row = random_view(rng, 50, 1, false);
    ASSERT_TRUE(resize(row, got, cv::Size(70, 4)));
    for (int y = 1; y < 4; ++y)
        EXPECT_EQ(cv::norm(got.row(y), got.row(0), cv::NORM_INF), 0);
}

// Shrinking more than about 2.6 times along x, and equal sizes, are cv::resize's: declined,
// nothing written.
TEST(ResizeBilinear, DeclinesWhatItsWindowCannotHoldAndPlainCopies) {
    SKIP_WITHOUT_VBMI();
    cv::RNG rng(7);
    const cv::Mat src = random_view(rng, 300, 40, false);
    for (const cv::Size size : {cv::Size(100, 40), cv::Size(60, 10), cv::Size(300, 40)}) {
        cv::Mat dst(size, CV_8UC3, cv::Scalar::all(9));
        Scratch scratch(size.width);
        EXPECT_FALSE(resize_bgr_bilinear(view_of(src), dst.data, size.width, size.height, dst.step,
                                         scratch.get()))
            << size;
        EXPECT_EQ(cv::countNonZero(dst.reshape(1) != 9), 0) << size;
    }
    cv::Mat dst;
    EXPECT_TRUE(resize(src, dst, cv::Size(120, 40)));  // shrinking by 2.5 still fits
}
