#pragma once
// The backward of nearest upsampling by an integer factor (plugins/detect/model/yolo_blocks.h,
// Upsample) on channels-last rows with AVX-512: each input pixel's gradient is the sum of its
// factor x factor output pixels' rows, added in LibTorch's order (output rows top to bottom, left
// to right), so the result equals upsample_nearest2d_backward's. The output gradient comes as
// rows of `channels` floats, pixel p at grad + p * stride (stride >= channels: a channel slice of
// the neck's concatenation is read in place, where LibTorch would first copy it dense). Works on
// input pixels [begin, end) of the batch's n * in_h * in_w, and returns false, touching nothing,
// where the CPU (or the compiler: x86-64 only) has no AVX-512.
#include <cstdint>

namespace crucible::detect {

struct UpsampleShape {
    std::int64_t channels = 0, in_h = 0, in_w = 0, factor = 1;
};

bool upsample_simd_available();

// grad_input: dense rows of `channels` floats, one per input pixel.
bool upsample_nearest_backward_avx512(const float* grad, std::int64_t stride,
                                      const UpsampleShape& shape, std::int64_t begin,
                                      std::int64_t end, float* grad_input);

}  // namespace crucible::detect
