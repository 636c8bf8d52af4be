#pragma once
// The CPU's fast path for the HSV jitter (augment_hsv): one pass over BGR pixels with AVX2 and
// FMA, or AVX-512, on x86-64 (GCC, Clang and MSVC; hsv_simd.cpp) where the CPU has them at run
// time (core/base/cpu_features.h). It takes no round trip through 8-bit HSV: per pixel, value V =
// max, chroma C = max - min and hue h in sixths of the circle come from B, G, R as floats; then
//   V' = floor(min(V * v_gain, 255)),  C' = V' * min(C / V * s_gain, 1),
//   h' = h * h_gain modulo 6,          out = V' - C' * w(h'),
// w being each channel's share of the chroma at hue h' (0 for the largest channel, 1 for the
// smallest, a ramp between). That is OpenCV's HSV conversion pair with the jitter tables between
// them, without the pair's quantisation of hue to 2 degrees and of saturation to 1/255; V' is
// floored as the reference's table truncates it. Gains of 1 give back every pixel exactly.
#include <cstdint>

namespace crucible::data {

// Multipliers of hue, saturation and value (1: unchanged).
struct HsvGains {
    double hue = 1, saturation = 1, value = 1;
};

// Jitters `pixels` interleaved BGR pixels in place. False, writing nothing, where AVX2 and FMA
// are not there (the caller then takes OpenCV's conversions).
bool hsv_gains_avx2(std::uint8_t* bgr, std::int64_t pixels, HsvGains gains);
// The same with AVX-512F, 16 lanes at a time: the same operations, so the same bits.
bool hsv_gains_avx512(std::uint8_t* bgr, std::int64_t pixels, HsvGains gains);
// The same again with AVX-512BW and VBMI, whose byte permutations move pixels in and out of the
// lanes in three instructions where the others take eighteen; the same bits.
bool hsv_gains_avx512_vbmi(std::uint8_t* bgr, std::int64_t pixels, HsvGains gains);

}  // namespace crucible::data
