#pragma once
// The CPU's fast path for the bilinear resize that every default training affine is
// (warp_as_resize in augment.h): interleaved 8-bit BGR, AVX-512BW + VBMI, where the CPU has them
// at run time (core/base/cpu_features.h). cv::resize took about a third of an uncached sample's
// time at 640 px; this takes 0.18-0.34 ms where cv::resize takes 0.39-0.59 (640 px out of
// 427-1280, one thread).
//
// Geometry as cv::resize with INTER_LINEAR: output pixel x samples the source at
// sx = (x + 0.5) * src_width / dst_width - 0.5, clamped to [0, src_width - 1] (the edge pixel
// repeats), and likewise for rows. The fractions are rounded to 1/64 of a pixel along x
// (cv::warpAffine's tables use 1/32) and to 1/32768 along y, and the output once: on noise the
// output is within 3 levels of the exact bilinear value, on photo-like pixels within 2 of
// cv::resize's (tests/data_pipeline/resize_test.cpp).
//
// No OpenCV and no standard containers here (the file is also syntax-checked in MSVC mode with
// thin library stand-ins): the caller brings the scratch memory.
#include <cstddef>
#include <cstdint>

namespace crucible::data {

// Pixels to read: `height` rows of `width` BGR pixels, `step` bytes from one row to the next.
struct BgrPixels {
    const std::uint8_t* data = nullptr;
    int width = 0, height = 0;
    std::size_t step = 0;
};

// Bytes of scratch memory resize_bgr_bilinear needs for an output `dst_width` pixels wide.
std::size_t bilinear_scratch_bytes(int dst_width);

// Resizes src into the dst_width x dst_height pixels at dst (rows dst_step bytes apart; they must
// not overlap src). False, writing nothing, where the CPU lacks AVX-512BW and VBMI, where the sizes
// are equal (a copy), or where the output shrinks the source more than about 2.6 times along x (a
// block of 16 output pixels reads at most 42 source pixels, its 128-byte window); the caller then
// takes cv::resize. `scratch`:
// bilinear_scratch_bytes(dst_width) bytes, 64-byte aligned.
bool resize_bgr_bilinear(const BgrPixels& src, std::uint8_t* dst, int dst_width, int dst_height,
                         std::size_t dst_step, void* scratch);

}  // namespace crucible::data
