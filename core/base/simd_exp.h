#pragma once
// e^x on 16 floats with AVX-512, to about 1 ulp, for the CPU kernels that need a vector exp
// (core/engine/bn_silu_simd.cpp, plugins/detect/model/dfl_simd.cpp). x86-64 only: include it
// where CRUCIBLE_TARGET("avx512f") code is compiled, and call it only where
// cpu_features().avx512f holds.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include "core/base/cpu_features.h"

namespace crucible {

// GCC 12 warns that the undefined pass-through of AVX-512's unmasked intrinsics may be used
// uninitialized; every lane is written. (Clang and MSVC would warn of an unknown option.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// x = n ln 2 + r with |r| <= ln 2 / 2, e^r by its Taylor series to r^7 (remainder below 6e-9
// relative), times 2^n by scalef. Clamped where float over- or underflows.
CRUCIBLE_TARGET("avx512f") inline __m512 exp16_avx512(__m512 x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.7f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);  // ln 2, high part exact
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);      // and the rest
    __m512 p = _mm512_set1_ps(1.0f / 5040);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace crucible

#endif
