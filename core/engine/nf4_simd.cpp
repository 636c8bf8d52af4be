#include "core/engine/nf4_simd.h"

// GCC and Clang only: to_bf16 casts between vector types as their vector extension allows.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "core/base/cpu_features.h"
#define CRUCIBLE_NF4_AVX512 1
#endif

namespace crucible::engine {

#ifdef CRUCIBLE_NF4_AVX512
namespace {

// The masked forms with every lane on (maskz): GCC 12 warns that the unmasked ones' undefined
// pass-through may be used uninitialized.
constexpr __mmask32 kAll32 = 0xFFFFFFFFu;
constexpr __mmask16 kAll16 = 0xFFFF;
constexpr __mmask8 kAll4 = 0xF;

// The 16 values that 16 codes (bytes) pick from a block's scaled levels.
CRUCIBLE_TARGET("avx512f,avx512bw") inline __m512 pick(__m512 scaled, __m128i codes) {
    return _mm512_maskz_permutexvar_ps(kAll16, _mm512_maskz_cvtepu8_epi32(kAll16, codes), scaled);
}

CRUCIBLE_TARGET("avx512f,avx512bw,avx512bf16") inline __m256i to_bf16(__m512 values) {
    return (__m256i)_mm512_maskz_cvtneps_pbh(kAll16, values);
}

template <bool Bf16>
CRUCIBLE_TARGET("avx512f,avx512bw,avx512bf16")
void blocks(const std::uint8_t* packed, const float* absmax, const float* levels,
            std::int64_t begin, std::int64_t end, void* out) {
    const __m512 table = _mm512_loadu_ps(levels);
    const __m512i low_nibble = _mm512_set1_epi16(15);
    for (std::int64_t b = begin; b < end; ++b) {
        const __m512 scaled = _mm512_mul_ps(table, _mm512_set1_ps(absmax[b]));
        // 32 bytes to 64 codes in value order: as 16-bit lanes (high nibble) | (low nibble << 8),
        // whose bytes read high0, low0, high1, low1, ...
        const __m512i wide = _mm512_maskz_cvtepu8_epi16(
            kAll32, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(packed + b * 32)));
        const __m512i codes = _mm512_or_si512(
            _mm512_srli_epi16(wide, 4), _mm512_slli_epi16(_mm512_and_si512(wide, low_nibble), 8));
        const __m512 v0 = pick(scaled, _mm512_maskz_extracti32x4_epi32(kAll4, codes, 0));
        const __m512 v1 = pick(scaled, _mm512_maskz_extracti32x4_epi32(kAll4, codes, 1));
        const __m512 v2 = pick(scaled, _mm512_maskz_extracti32x4_epi32(kAll4, codes, 2));
        const __m512 v3 = pick(scaled, _mm512_maskz_extracti32x4_epi32(kAll4, codes, 3));
        if constexpr (Bf16) {
            auto* o = static_cast<std::uint16_t*>(out) + b * 64;
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(o), to_bf16(v0));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 16), to_bf16(v1));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 32), to_bf16(v2));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 48), to_bf16(v3));
        } else {
            float* o = static_cast<float*>(out) + b * 64;
            _mm512_storeu_ps(o, v0);
            _mm512_storeu_ps(o + 16, v1);
            _mm512_storeu_ps(o + 32, v2);
            _mm512_storeu_ps(o + 48, v3);
        }
    }
}

bool cpu_has_avx512(bool bf16) {
    const CpuFeatures& cpu = cpu_features();
    const bool base = cpu.avx512f && cpu.avx512bw;
    return bf16 ? base && cpu.avx512bf16 : base;
}

}  // namespace

bool nf4_blocks_avx512(const std::uint8_t* packed, const float* absmax, const float* levels,
                       std::int64_t begin, std::int64_t end, void* out, bool bf16) {
    if (!cpu_has_avx512(bf16)) return false;
    if (bf16)
        blocks<true>(packed, absmax, levels, begin, end, out);
    else
        blocks<false>(packed, absmax, levels, begin, end, out);
    return true;
}

#else

bool nf4_blocks_avx512(const std::uint8_t*, const float*, const float*, std::int64_t, std::int64_t,
                       void*, bool) {
    return false;
}

#endif

}  // namespace crucible::engine
