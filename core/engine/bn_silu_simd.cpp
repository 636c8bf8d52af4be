#include "core/engine/bn_silu_simd.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include "core/base/cpu_features.h"
#include "core/base/simd_exp.h"
#define CRUCIBLE_BN_SILU_AVX512 1
#endif

namespace crucible::engine {

#ifdef CRUCIBLE_BN_SILU_AVX512
namespace {

#define CRUCIBLE_AVX512 CRUCIBLE_TARGET("avx512f") inline

// GCC 12 warns that the undefined pass-through of AVX-512's unmasked intrinsics may be used
// uninitialized; every lane is written. (Clang and MSVC would warn of an unknown option.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// 1 / (1 + e^-z): the reciprocal from rcp14 (14 bits) and one Newton step (about 28 bits), as a
// division's throughput would bound the whole pass.
CRUCIBLE_AVX512 __m512 sigmoid16(__m512 z) {
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 d = _mm512_add_ps(one, exp16_avx512(_mm512_sub_ps(_mm512_setzero_ps(), z)));
    const __m512 r = _mm512_rcp14_ps(d);
    return _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0f)));
}

// Adds the 16 floats of v to 16 doubles at acc.
CRUCIBLE_AVX512 void add_to_doubles(double* acc, __m512 v) {
    const __m256 low = _mm512_castps512_ps256(v);
    const __m256 high = _mm256_castsi256_ps(_mm512_extracti64x4_epi64(_mm512_castps_si512(v), 1));
    _mm512_storeu_pd(acc, _mm512_add_pd(_mm512_loadu_pd(acc), _mm512_cvtps_pd(low)));
    _mm512_storeu_pd(acc + 8, _mm512_add_pd(_mm512_loadu_pd(acc + 8), _mm512_cvtps_pd(high)));
}

// Rows are summed in floats kFloatRun at a time, then added to the doubles: the float part's
// error stays at a few ulp of kFloatRun values, and the doubles keep millions of rows exact
// enough. The channels go in tiles of up to 64 (V vectors), whose sums stay in registers while
// the rows stream past.
constexpr std::int64_t kFloatRun = 32;

// Every pass prefetches the rows it will read about 2 KiB ahead of the one it reads. The passes
// stream tensors far larger than the caches, and the hardware prefetchers alone left each core
// short of the memory's bandwidth: bench_bn_silu (57 layers, 2 threads) took 75.6-81.6 ms with
// these prefetches against 89.0-93.6 ms without, interleaved runs. A prefetch past a tensor's end
// is harmless (it never faults).
constexpr std::int64_t kPrefetchBytes = 2048;

std::int64_t rows_ahead(std::int64_t stride) {
    const std::int64_t rows = kPrefetchBytes / (stride * static_cast<std::int64_t>(sizeof(float)));
    return rows < 1 ? 1 : rows;
}

CRUCIBLE_AVX512 void prefetch(const float* p) {
    _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
}

// Sums over rows [begin, end) of two per-channel quantities of a tile of V x 16 channels from c,
// which `terms(row, channel, a, b)` gives, into the doubles at sum_a + c and sum_b + c.
template <int V, typename Terms>
CRUCIBLE_AVX512 void sum_tile(std::int64_t c, std::int64_t begin, std::int64_t end, Terms terms,
                              double* sum_a, double* sum_b) {
    for (std::int64_t r0 = begin; r0 < end; r0 += kFloatRun) {
        const std::int64_t r1 = r0 + kFloatRun < end ? r0 + kFloatRun : end;
        __m512 a[V], b[V];
        for (int v = 0; v < V; ++v)
            a[v] = b[v] = _mm512_setzero_ps();
        for (std::int64_t r = r0; r < r1; ++r)
            for (int v = 0; v < V; ++v)
                terms(r, c + 16 * v, a[v], b[v]);
        for (int v = 0; v < V; ++v) {
            add_to_doubles(sum_a + c + 16 * v, a[v]);
            add_to_doubles(sum_b + c + 16 * v, b[v]);
        }
    }
}

template <typename Terms>
CRUCIBLE_AVX512 void sum_rows(std::int64_t channels, std::int64_t begin, std::int64_t end,
                              Terms terms, double* sum_a, double* sum_b) {
    std::int64_t c = 0;
    for (; c + 64 <= channels; c += 64)
        sum_tile<4>(c, begin, end, terms, sum_a, sum_b);
    switch ((channels - c) / 16) {
        case 3:
            sum_tile<3>(c, begin, end, terms, sum_a, sum_b);
            break;
        case 2:
            sum_tile<2>(c, begin, end, terms, sum_a, sum_b);
            break;
        case 1:
            sum_tile<1>(c, begin, end, terms, sum_a, sum_b);
            break;
        default:
            break;
    }
}

// The statistics' terms: x - pivot and its square.
struct StatsTerms {
    ChannelRows x;
    const float* pivot;
    std::int64_t ahead;  // rows_ahead(x.stride)
    CRUCIBLE_AVX512 void operator()(std::int64_t r, std::int64_t c, __m512& s, __m512& q) const {
        prefetch(x.data + (r + ahead) * x.stride + c);
        const __m512 v =
            _mm512_sub_ps(_mm512_loadu_ps(x.data + r * x.stride + c), _mm512_loadu_ps(pivot + c));
        s = _mm512_add_ps(s, v);
        q = _mm512_fmadd_ps(v, v, q);
    }
};

CRUCIBLE_TARGET("avx512f")
void stats(ChannelRows x, std::int64_t channels, std::int64_t begin, std::int64_t end,
           const float* pivot, double* sum, double* squares) {
    sum_rows(channels, begin, end, StatsTerms{x, pivot, rows_ahead(x.stride)}, sum, squares);
}

CRUCIBLE_TARGET("avx512f")
void forward(ChannelRows x, std::int64_t channels, std::int64_t begin, std::int64_t end,
             const float* mean, const float* scale, const float* shift, float* y) {
    const std::int64_t ahead = rows_ahead(x.stride) * x.stride;
    for (std::int64_t r = begin; r < end; ++r) {
        const float* in = x.data + r * x.stride;
        float* out = y + r * channels;
        for (std::int64_t c = 0; c < channels; c += 16)
            prefetch(in + ahead + c);
        for (std::int64_t c = 0; c < channels; c += 16) {
            const __m512 centred =
                _mm512_sub_ps(_mm512_loadu_ps(in + c), _mm512_loadu_ps(mean + c));
            const __m512 z =
                _mm512_fmadd_ps(centred, _mm512_loadu_ps(scale + c), _mm512_loadu_ps(shift + c));
            _mm512_storeu_ps(out + c, _mm512_mul_ps(z, sigmoid16(z)));
        }
    }
}

// dz = dy * s * (1 + z * (1 - s)) and xhat for 16 channels of one row.
struct Grad16 {
    __m512 dz, xhat;
};

CRUCIBLE_AVX512 Grad16 grad_at(const float* dy, const float* x, const float* scale,
                               const float* shift, const float* mean, const float* invstd,
                               std::int64_t c) {
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 v = _mm512_loadu_ps(x + c);
    const __m512 centred = _mm512_sub_ps(v, _mm512_loadu_ps(mean + c));
    const __m512 z =
        _mm512_fmadd_ps(centred, _mm512_loadu_ps(scale + c), _mm512_loadu_ps(shift + c));
    const __m512 s = sigmoid16(z);
    const __m512 slope = _mm512_mul_ps(s, _mm512_fmadd_ps(z, _mm512_sub_ps(one, s), one));
    return {_mm512_mul_ps(_mm512_loadu_ps(dy + c), slope),
            _mm512_mul_ps(centred, _mm512_loadu_ps(invstd + c))};
}

// The backward sums' terms: dz and dz * xhat; dz is also kept for the second pass.
struct GradTerms {
    ChannelRows dy, x;
    const float *scale, *shift, *mean, *invstd;
    float* dz;  // rows of `channels`
    std::int64_t channels;
    std::int64_t dy_ahead = 1, x_ahead = 1;  // rows_ahead of each stride
    CRUCIBLE_AVX512 void operator()(std::int64_t r, std::int64_t c, __m512& a, __m512& b) const {
        prefetch(dy.data + (r + dy_ahead) * dy.stride + c);
        prefetch(x.data + (r + x_ahead) * x.stride + c);
        const Grad16 g =
            grad_at(dy.data + r * dy.stride, x.data + r * x.stride, scale, shift, mean, invstd, c);
        _mm512_storeu_ps(dz + r * channels + c, g.dz);
        a = _mm512_add_ps(a, g.dz);
        b = _mm512_fmadd_ps(g.dz, g.xhat, b);
    }
};

CRUCIBLE_TARGET("avx512f")
void backward_sums(ChannelRows dy, ChannelRows x, std::int64_t channels, std::int64_t begin,
                   std::int64_t end, const float* scale, const float* shift, const float* mean,
                   const float* invstd, double* sum_dz, double* sum_dz_xhat, float* dz) {
    GradTerms terms{dy, x, scale, shift, mean, invstd, dz, channels};
    terms.dy_ahead = rows_ahead(dy.stride);
    terms.x_ahead = rows_ahead(x.stride);
    sum_rows(channels, begin, end, terms, sum_dz, sum_dz_xhat);
}

CRUCIBLE_TARGET("avx512f")
void backward_dx(ChannelRows x, std::int64_t channels, std::int64_t begin, std::int64_t end,
                 const float* mean, const float* invstd, const float* mean_dz,
                 const float* mean_dz_xhat, const float* gain, float* dz_then_dx) {
    const std::int64_t x_ahead = rows_ahead(x.stride) * x.stride;
    const std::int64_t io_ahead = rows_ahead(channels) * channels;
    for (std::int64_t r = begin; r < end; ++r) {
        const float* in = x.data + r * x.stride;
        float* io = dz_then_dx + r * channels;
        for (std::int64_t c = 0; c < channels; c += 16) {
            prefetch(in + x_ahead + c);
            prefetch(io + io_ahead + c);
        }
        for (std::int64_t c = 0; c < channels; c += 16) {
            const __m512 xhat =
                _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(in + c), _mm512_loadu_ps(mean + c)),
                              _mm512_loadu_ps(invstd + c));
            const __m512 centred = _mm512_fnmadd_ps(
                xhat, _mm512_loadu_ps(mean_dz_xhat + c),
                _mm512_sub_ps(_mm512_loadu_ps(io + c), _mm512_loadu_ps(mean_dz + c)));
            _mm512_storeu_ps(io + c, _mm512_mul_ps(centred, _mm512_loadu_ps(gain + c)));
        }
    }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

bool usable(std::int64_t channels) {
    return channels > 0 && channels % 16 == 0 && cpu_features().avx512f;
}

}  // namespace

bool bn_silu_avx512_available(std::int64_t channels) {
    return usable(channels);
}

bool bn_silu_stats_avx512(ChannelRows x, std::int64_t channels, std::int64_t begin,
                          std::int64_t end, const float* pivot, double* sum, double* squares) {
    if (!usable(channels)) return false;
    stats(x, channels, begin, end, pivot, sum, squares);
    return true;
}

bool bn_silu_forward_avx512(ChannelRows x, std::int64_t channels, std::int64_t begin,
                            std::int64_t end, const float* mean, const float* scale,
                            const float* shift, float* y) {
    if (!usable(channels)) return false;
    forward(x, channels, begin, end, mean, scale, shift, y);
    return true;
}

bool bn_silu_backward_sums_avx512(ChannelRows dy, ChannelRows x, std::int64_t channels,
                                  std::int64_t begin, std::int64_t end, const float* scale,
                                  const float* shift, const float* mean, const float* invstd,
                                  double* sum_dz, double* sum_dz_xhat, float* dz) {
    if (!usable(channels)) return false;
    backward_sums(dy, x, channels, begin, end, scale, shift, mean, invstd, sum_dz, sum_dz_xhat, dz);
    return true;
}

bool bn_silu_backward_dx_avx512(ChannelRows x, std::int64_t channels, std::int64_t begin,
                                std::int64_t end, const float* mean, const float* invstd,
                                const float* mean_dz, const float* mean_dz_xhat, const float* gain,
                                float* dz_then_dx) {
    if (!usable(channels)) return false;
    backward_dx(x, channels, begin, end, mean, invstd, mean_dz, mean_dz_xhat, gain, dz_then_dx);
    return true;
}

#else

bool bn_silu_avx512_available(std::int64_t) {
    return false;
}

bool bn_silu_stats_avx512(ChannelRows, std::int64_t, std::int64_t, std::int64_t, const float*,
                          double*, double*) {
    return false;
}

bool bn_silu_forward_avx512(ChannelRows, std::int64_t, std::int64_t, std::int64_t, const float*,
                            const float*, const float*, float*) {
    return false;
}

bool bn_silu_backward_sums_avx512(ChannelRows, ChannelRows, std::int64_t, std::int64_t,
                                  std::int64_t, const float*, const float*, const float*,
                                  const float*, double*, double*, float*) {
    return false;
}

bool bn_silu_backward_dx_avx512(ChannelRows, ChannelRows, std::int64_t, std::int64_t, std::int64_t,
                                const float*, const float*, const float*, const float*,
                                const float*, const float*, const float*, float*) {
    return false;
}

#endif

}  // namespace crucible::engine
