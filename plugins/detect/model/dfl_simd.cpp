#include "plugins/detect/model/dfl_simd.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include "core/base/cpu_features.h"
#include "core/base/simd_exp.h"
#define CRUCIBLE_DFL_AVX512 1
#endif

namespace crucible::detect {

#ifdef CRUCIBLE_DFL_AVX512
namespace {

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// One side's softmax numerators e^(x - max) and their sum.
struct Softmax16 {
    __m512 e;
    float sum;
};

CRUCIBLE_TARGET("avx512f") inline Softmax16 softmax16(const float* logits) {
    const __m512 x = _mm512_loadu_ps(logits);
    const __m512 e = exp16_avx512(_mm512_sub_ps(x, _mm512_set1_ps(_mm512_reduce_max_ps(x))));
    return {e, _mm512_reduce_add_ps(e)};
}

CRUCIBLE_TARGET("avx512f") inline __m512 bins16() {
    return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

CRUCIBLE_TARGET("avx512f")
void forward(const float* logits, std::int64_t stride, std::int64_t begin, std::int64_t end,
             float* distances) {
    const __m512 bins = bins16();
    for (std::int64_t r = begin; r < end; ++r)
        for (int side = 0; side < 4; ++side) {
            const Softmax16 s = softmax16(logits + r * stride + side * kDflSimdBins);
            distances[r * 4 + side] = _mm512_reduce_add_ps(_mm512_mul_ps(s.e, bins)) / s.sum;
        }
}

CRUCIBLE_TARGET("avx512f")
void backward(const float* logits, std::int64_t stride, const float* distances,
              const float* grad_distances, std::int64_t begin, std::int64_t end,
              float* grad_logits) {
    const __m512 bins = bins16();
    for (std::int64_t r = begin; r < end; ++r)
        for (int side = 0; side < 4; ++side) {
            const Softmax16 s = softmax16(logits + r * stride + side * kDflSimdBins);
            const float g = grad_distances[r * 4 + side] / s.sum;  // dd / sum folds into p
            const __m512 centred = _mm512_sub_ps(bins, _mm512_set1_ps(distances[r * 4 + side]));
            _mm512_storeu_ps(grad_logits + (r * 4 + side) * kDflSimdBins,
                             _mm512_mul_ps(_mm512_mul_ps(s.e, _mm512_set1_ps(g)), centred));
        }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace

bool dfl_simd_available() {
    return cpu_features().avx512f;
}

bool dfl_expectation_avx512(const float* logits, std::int64_t stride, std::int64_t begin,
                            std::int64_t end, float* distances) {
    if (!dfl_simd_available()) return false;
    forward(logits, stride, begin, end, distances);
    return true;
}

bool dfl_expectation_backward_avx512(const float* logits, std::int64_t stride,
                                     const float* distances, const float* grad_distances,
                                     std::int64_t begin, std::int64_t end, float* grad_logits) {
    if (!dfl_simd_available()) return false;
    backward(logits, stride, distances, grad_distances, begin, end, grad_logits);
    return true;
}

#else

bool dfl_simd_available() {
    return false;
}

bool dfl_expectation_avx512(const float*, std::int64_t, std::int64_t, std::int64_t, float*) {
    return false;
}

bool dfl_expectation_backward_avx512(const float*, std::int64_t, const float*, const float*,
                                     std::int64_t, std::int64_t, float*) {
    return false;
}

#endif

}  // namespace crucible::detect
