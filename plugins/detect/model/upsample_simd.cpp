#include "plugins/detect/model/upsample_simd.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include "core/base/cpu_features.h"
#define CRUCIBLE_UPSAMPLE_AVX512 1
#endif

namespace crucible::detect {

#ifdef CRUCIBLE_UPSAMPLE_AVX512
namespace {

CRUCIBLE_TARGET("avx512f")
void backward_rows(const float* grad, std::int64_t stride, const UpsampleShape& s,
                   std::int64_t begin, std::int64_t end, float* grad_input) {
    const std::int64_t f = s.factor, out_w = s.in_w * f, per_image = s.in_h * s.in_w;
    for (std::int64_t p = begin; p < end; ++p) {
        const std::int64_t n = p / per_image, y = (p % per_image) / s.in_w, x = p % s.in_w;
        // The first of the pixel's output rows: image n, output row y * f, column x * f.
        const float* first = grad + ((n * s.in_h * f + y * f) * out_w + x * f) * stride;
        float* out = grad_input + p * s.channels;
        for (std::int64_t c = 0; c < s.channels; c += 16) {
            const std::int64_t left = s.channels - c;
            const auto mask = static_cast<__mmask16>(left >= 16 ? 0xffff : (1u << left) - 1);
            __m512 sum = _mm512_setzero_ps();
            for (std::int64_t a = 0; a < f; ++a)
                for (std::int64_t b = 0; b < f; ++b)
                    sum = _mm512_add_ps(
                        sum, _mm512_maskz_loadu_ps(mask, first + (a * out_w + b) * stride + c));
            _mm512_mask_storeu_ps(out + c, mask, sum);
        }
    }
}

}  // namespace

bool upsample_simd_available() {
    return cpu_features().avx512f;
}

bool upsample_nearest_backward_avx512(const float* grad, std::int64_t stride,
                                      const UpsampleShape& shape, std::int64_t begin,
                                      std::int64_t end, float* grad_input) {
    if (!cpu_features().avx512f) return false;
    backward_rows(grad, stride, shape, begin, end, grad_input);
    return true;
}

#else

bool upsample_simd_available() {
    return false;
}

bool upsample_nearest_backward_avx512(const float*, std::int64_t, const UpsampleShape&,
                                      std::int64_t, std::int64_t, float*) {
    return false;
}

#endif

}  // namespace crucible::detect
