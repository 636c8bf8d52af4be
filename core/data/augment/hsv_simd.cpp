#include "core/data/augment/hsv_simd.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstring>

#include "core/base/cpu_features.h"
#define CRUCIBLE_HSV_AVX2 1
#endif

namespace crucible::data {

#ifdef CRUCIBLE_HSV_AVX2
namespace {

#define CRUCIBLE_AVX2_FMA CRUCIBLE_TARGET("avx2,fma") inline

// pshufb masks between 16 interleaved BGR pixels (48 bytes: three 16-byte chunks) and three
// 16-byte planes, one lane a pixel. gather[c][k] moves channel c's bytes found in chunk k to
// their pixel's lane; scatter[k][c] moves channel c's lanes to their bytes in chunk k. -128
// (high bit set) writes a zero, so the three shuffles of a result are or-ed together.
struct ShuffleMasks {
    alignas(16) std::int8_t gather[3][3][16];
    alignas(16) std::int8_t scatter[3][3][16];
};

constexpr ShuffleMasks make_shuffle_masks() {
    ShuffleMasks m{};
    for (int c = 0; c < 3; ++c)
        for (int k = 0; k < 3; ++k)
            for (int i = 0; i < 16; ++i) {
                const int byte_in_chunk = 3 * i + c - 16 * k;
                m.gather[c][k][i] = static_cast<std::int8_t>(
                    byte_in_chunk >= 0 && byte_in_chunk < 16 ? byte_in_chunk : -128);
                const int byte = 16 * k + i;
                m.scatter[k][c][i] = static_cast<std::int8_t>(byte % 3 == c ? byte / 3 : -128);
            }
    return m;
}

constexpr ShuffleMasks kMasks = make_shuffle_masks();

CRUCIBLE_AVX2_FMA __m128i load16(const void* p) {
    return _mm_loadu_si128(static_cast<const __m128i*>(p));
}

CRUCIBLE_AVX2_FMA __m128i shuffle3(const __m128i in[3], const std::int8_t (&masks)[3][16]) {
    return _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(in[0], load16(masks[0])),
                                     _mm_shuffle_epi8(in[1], load16(masks[1]))),
                        _mm_shuffle_epi8(in[2], load16(masks[2])));
}

CRUCIBLE_AVX2_FMA __m256 low8_as_float(__m128i bytes) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
}

// Two vectors of 8 floats in [0, 255], rounded to nearest, as 16 bytes.
CRUCIBLE_AVX2_FMA __m128i to_bytes(__m256 low, __m256 high) {
    const __m256i a = _mm256_cvtps_epi32(low), b = _mm256_cvtps_epi32(high);
    return _mm_packus_epi16(
        _mm_packs_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1)),
        _mm_packs_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1)));
}

// The last pixels of a row (fewer than 16) in a zero-padded block of 16, written back when it
// goes: they get the same arithmetic as the rest.
class PaddedTail {
  public:
    PaddedTail(std::uint8_t* pixels, std::int64_t count)
        : pixels_(pixels), bytes_(static_cast<std::size_t>(3 * count)) {
        std::memcpy(block, pixels_, bytes_);
    }
    ~PaddedTail() { std::memcpy(pixels_, block, bytes_); }
    PaddedTail(const PaddedTail&) = delete;
    PaddedTail& operator=(const PaddedTail&) = delete;

    std::uint8_t block[48] = {};

  private:
    std::uint8_t* pixels_;
    std::size_t bytes_;
};

struct Gains8 {
    __m256 hue, saturation, value;
};

// A channel's output at hue h (sixths, in [0, 6]) for value v and chroma c: n is 5 for red, 3 for
// green, 1 for blue; its share of the chroma is clamp(min(t, 4 - t), 0, 1), t = (n + h) mod 6.
CRUCIBLE_AVX2_FMA __m256 channel_at_hue(float n, __m256 h, __m256 v, __m256 c) {
    const __m256 six = _mm256_set1_ps(6);
    __m256 t = _mm256_add_ps(h, _mm256_set1_ps(n));
    t = _mm256_sub_ps(t, _mm256_and_ps(_mm256_cmp_ps(t, six, _CMP_GE_OQ), six));
    const __m256 share = _mm256_max_ps(
        _mm256_setzero_ps(),
        _mm256_min_ps(_mm256_min_ps(t, _mm256_sub_ps(_mm256_set1_ps(4), t)), _mm256_set1_ps(1)));
    return _mm256_fnmadd_ps(c, share, v);
}

// 8 pixels as floats, in place: the formula of hsv_simd.h.
CRUCIBLE_AVX2_FMA void jitter8(__m256& b, __m256& g, __m256& r, const Gains8& gains) {
    const __m256 one = _mm256_set1_ps(1), six = _mm256_set1_ps(6);
    const __m256 v = _mm256_max_ps(_mm256_max_ps(b, g), r);
    const __m256 c = _mm256_sub_ps(v, _mm256_min_ps(_mm256_min_ps(b, g), r));
    // One division for both quotients: 1/C = V·inv and C/V = C·C·inv. V·C is at least 1 when
    // C > 0; when C = 0 every quotient below is multiplied by 0 anyway.
    const __m256 inv = _mm256_div_ps(one, _mm256_max_ps(_mm256_mul_ps(v, c), one));
    // Hue in sixths: (G - B)/C when red is largest, 2 + (B - R)/C for green, 4 + (R - G)/C.
    const __m256 red = _mm256_cmp_ps(v, r, _CMP_EQ_OQ);
    const __m256 green = _mm256_andnot_ps(red, _mm256_cmp_ps(v, g, _CMP_EQ_OQ));
    const __m256 difference =
        _mm256_blendv_ps(_mm256_blendv_ps(_mm256_sub_ps(r, g), _mm256_sub_ps(b, r), green),
                         _mm256_sub_ps(g, b), red);
    const __m256 start = _mm256_blendv_ps(
        _mm256_blendv_ps(_mm256_set1_ps(4), _mm256_set1_ps(2), green), _mm256_setzero_ps(), red);
    // In [-1, 6); the gain multiplies the hue in [0, 6) (red's negative side wrapped first, as
    // in 8-bit HSV), and the product wraps again.
    __m256 h = _mm256_fmadd_ps(difference, _mm256_mul_ps(v, inv), start);
    h = _mm256_add_ps(h, _mm256_and_ps(_mm256_cmp_ps(h, _mm256_setzero_ps(), _CMP_LT_OQ), six));
    h = _mm256_mul_ps(h, gains.hue);
    h = _mm256_fnmadd_ps(_mm256_floor_ps(_mm256_mul_ps(h, _mm256_set1_ps(1.0f / 6))), six, h);
    const __m256 value =
        _mm256_floor_ps(_mm256_min_ps(_mm256_mul_ps(v, gains.value), _mm256_set1_ps(255)));
    const __m256 saturation = _mm256_min_ps(
        _mm256_mul_ps(_mm256_mul_ps(c, _mm256_mul_ps(c, inv)), gains.saturation), one);
    const __m256 chroma = _mm256_mul_ps(value, saturation);
    r = channel_at_hue(5, h, value, chroma);
    g = channel_at_hue(3, h, value, chroma);
    b = channel_at_hue(1, h, value, chroma);
}

// 16 pixels (48 bytes) in place.
CRUCIBLE_AVX2_FMA void jitter16(std::uint8_t* p, const Gains8& gains) {
    const __m128i chunks[3] = {load16(p), load16(p + 16), load16(p + 32)};
    __m128i planes[3];
    for (int c = 0; c < 3; ++c)
        planes[c] = shuffle3(chunks, kMasks.gather[c]);
    __m256 low[3], high[3];
    for (int c = 0; c < 3; ++c) {
        low[c] = low8_as_float(planes[c]);
        high[c] = low8_as_float(_mm_srli_si128(planes[c], 8));
    }
    jitter8(low[0], low[1], low[2], gains);
    jitter8(high[0], high[1], high[2], gains);
    for (int c = 0; c < 3; ++c)
        planes[c] = to_bytes(low[c], high[c]);
    for (int k = 0; k < 3; ++k)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 16 * k),
                         shuffle3(planes, kMasks.scatter[k]));
}

#define CRUCIBLE_AVX512 CRUCIBLE_TARGET("avx512f,avx2,fma") inline

// GCC 12 warns that the undefined pass-through of AVX-512's unmasked intrinsics may be (or, once
// inlined into the VBMI path, is) used uninitialized; every lane is written, so the warning is off
// for these functions. (Clang and MSVC would warn of an unknown warning or pragma.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

// jitter8's arithmetic on 16 lanes, operation for operation, so both give the same bits.
CRUCIBLE_AVX512 __m512 channel_at_hue16(float n, __m512 h, __m512 v, __m512 c) {
    const __m512 six = _mm512_set1_ps(6);
    __m512 t = _mm512_add_ps(h, _mm512_set1_ps(n));
    t = _mm512_mask_sub_ps(t, _mm512_cmp_ps_mask(t, six, _CMP_GE_OQ), t, six);
    const __m512 share = _mm512_max_ps(
        _mm512_setzero_ps(),
        _mm512_min_ps(_mm512_min_ps(t, _mm512_sub_ps(_mm512_set1_ps(4), t)), _mm512_set1_ps(1)));
    return _mm512_fnmadd_ps(c, share, v);
}

CRUCIBLE_AVX512 __m512 floor16(__m512 x) {
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}

CRUCIBLE_AVX512 void jitter16_lanes(__m512& b, __m512& g, __m512& r, __m512 gain_h, __m512 gain_s,
                                    __m512 gain_v) {
    const __m512 one = _mm512_set1_ps(1), six = _mm512_set1_ps(6), zero = _mm512_setzero_ps();
    const __m512 v = _mm512_max_ps(_mm512_max_ps(b, g), r);
    const __m512 c = _mm512_sub_ps(v, _mm512_min_ps(_mm512_min_ps(b, g), r));
    const __m512 inv = _mm512_div_ps(one, _mm512_max_ps(_mm512_mul_ps(v, c), one));
    const __mmask16 red = _mm512_cmp_ps_mask(v, r, _CMP_EQ_OQ);
    const __mmask16 green = static_cast<__mmask16>(~red & _mm512_cmp_ps_mask(v, g, _CMP_EQ_OQ));
    __m512 difference = _mm512_sub_ps(r, g);
    difference = _mm512_mask_sub_ps(difference, green, b, r);
    difference = _mm512_mask_sub_ps(difference, red, g, b);
    __m512 start = _mm512_set1_ps(4);
    start = _mm512_mask_mov_ps(start, green, _mm512_set1_ps(2));
    start = _mm512_mask_mov_ps(start, red, zero);
    __m512 h = _mm512_fmadd_ps(difference, _mm512_mul_ps(v, inv), start);
    h = _mm512_mask_add_ps(h, _mm512_cmp_ps_mask(h, zero, _CMP_LT_OQ), h, six);
    h = _mm512_mul_ps(h, gain_h);
    h = _mm512_fnmadd_ps(floor16(_mm512_mul_ps(h, _mm512_set1_ps(1.0f / 6))), six, h);
    const __m512 value = floor16(_mm512_min_ps(_mm512_mul_ps(v, gain_v), _mm512_set1_ps(255)));
    const __m512 saturation =
        _mm512_min_ps(_mm512_mul_ps(_mm512_mul_ps(c, _mm512_mul_ps(c, inv)), gain_s), one);
    const __m512 chroma = _mm512_mul_ps(value, saturation);
    r = channel_at_hue16(5, h, value, chroma);
    g = channel_at_hue16(3, h, value, chroma);
    b = channel_at_hue16(1, h, value, chroma);
}

// 16 pixels (48 bytes) in place, as one vector of 16 lanes. The masked forms with every lane
// on (maskz): GCC 12 warns that the unmasked ones' undefined pass-through may be used
// uninitialized.
CRUCIBLE_AVX512 void jitter16_avx512(std::uint8_t* p, __m512 gain_h, __m512 gain_s, __m512 gain_v) {
    constexpr __mmask16 all = 0xFFFF;
    const __m128i chunks[3] = {load16(p), load16(p + 16), load16(p + 32)};
    __m512 lanes[3];
    for (int c = 0; c < 3; ++c)
        lanes[c] = _mm512_maskz_cvtepi32_ps(
            all, _mm512_maskz_cvtepu8_epi32(all, shuffle3(chunks, kMasks.gather[c])));
    jitter16_lanes(lanes[0], lanes[1], lanes[2], gain_h, gain_s, gain_v);
    __m128i planes[3];
    for (int c = 0; c < 3; ++c)  // in [0, 255] once rounded; the max only guards -0.5 < x < 0
        planes[c] = _mm512_maskz_cvtusepi32_epi8(
            all, _mm512_maskz_max_epi32(all, _mm512_maskz_cvtps_epi32(all, lanes[c]),
                                        _mm512_setzero_si512()));
    for (int k = 0; k < 3; ++k)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 16 * k),
                         shuffle3(planes, kMasks.scatter[k]));
}

CRUCIBLE_TARGET("avx512f,avx2,fma")
void jitter_avx512(std::uint8_t* bgr, std::int64_t pixels, const HsvGains& gains) {
    const __m512 h = _mm512_set1_ps(static_cast<float>(gains.hue));
    const __m512 s = _mm512_set1_ps(static_cast<float>(gains.saturation));
    const __m512 v = _mm512_set1_ps(static_cast<float>(gains.value));
    std::int64_t i = 0;
    for (; i + 16 <= pixels; i += 16)
        jitter16_avx512(bgr + 3 * i, h, s, v);
    if (i < pixels) {
        PaddedTail tail(bgr + 3 * i, pixels - i);
        jitter16_avx512(tail.block, h, s, v);
    }
}

#define CRUCIBLE_AVX512_VBMI CRUCIBLE_TARGET("avx512f,avx512bw,avx512vbmi,avx2,fma") inline

// Byte permutations between 16 interleaved BGR pixels (48 bytes of a vector) and three vectors of
// 16 lanes, one pixel a lane (its byte the lane's lowest): with VBMI's vpermb each direction is
// one or two instructions instead of the nine pshufb of the 128-bit path.
struct PermuteIndices {
    // to_lanes[c][4 i] = 3 i + c: channel c of pixel i to the low byte of lane i.
    alignas(64) std::uint8_t to_lanes[3][64];
    // Output byte 3 i + c from lane i of blue (c 0, the first table) or green (c 1, the second;
    // bit 6 picks it), then red (c 2) from lane i in one more permutation.
    alignas(64) std::uint8_t blue_green[64];
    alignas(64) std::uint8_t red[64];
};

constexpr PermuteIndices make_permute_indices() {
    PermuteIndices m{};
    for (int c = 0; c < 3; ++c)
        for (int i = 0; i < 16; ++i)
            m.to_lanes[c][4 * i] = static_cast<std::uint8_t>(3 * i + c);
    for (int byte = 0; byte < 48; ++byte) {
        const int pixel = byte / 3, c = byte % 3;
        m.blue_green[byte] = static_cast<std::uint8_t>(4 * pixel + (c == 1 ? 64 : 0));
        m.red[byte] = static_cast<std::uint8_t>(4 * pixel);
    }
    return m;
}

constexpr PermuteIndices kPermute = make_permute_indices();
constexpr __mmask64 kLowByteOfEachLane = 0x1111111111111111ull;
constexpr __mmask64 kRedBytes = 0x924924924924ull;  // bytes 2, 5, ..., 47

// `pixels` (1 to 16) pixels in place: the loads and stores are masked, so a row's tail needs no
// padding. The arithmetic is jitter16_lanes', so the bits are jitter16_avx512's.
CRUCIBLE_AVX512_VBMI void jitter16_vbmi(std::uint8_t* p, int pixels, __m512 gain_h, __m512 gain_s,
                                        __m512 gain_v) {
    constexpr __mmask16 all = 0xFFFF;
    const bool whole = pixels >= 16;
    const __mmask64 bytes = (__mmask64{1} << (3 * (whole ? 16 : pixels))) - 1;
    // Whole blocks load and store as three 16-byte pieces: a 64-byte access overlapping the
    // previous block's store would wait for that store to retire.
    const __m512i data =
        whole ? _mm512_inserti32x4(
                    _mm512_inserti32x4(_mm512_castsi128_si512(load16(p)), load16(p + 16), 1),
                    load16(p + 32), 2)
              : _mm512_maskz_loadu_epi8(bytes, p);
    __m512 lanes[3];
    for (int c = 0; c < 3; ++c)
        lanes[c] = _mm512_maskz_cvtepi32_ps(
            all, _mm512_maskz_permutexvar_epi8(kLowByteOfEachLane,
                                               _mm512_load_si512(kPermute.to_lanes[c]), data));
    jitter16_lanes(lanes[0], lanes[1], lanes[2], gain_h, gain_s, gain_v);
    // Rounded and clamped to [0, 255], as the other paths' unsigned saturation does.
    __m512i rounded[3];
    for (int c = 0; c < 3; ++c)
        rounded[c] = _mm512_maskz_min_epi32(
            all,
            _mm512_maskz_max_epi32(all, _mm512_maskz_cvtps_epi32(all, lanes[c]),
                                   _mm512_setzero_si512()),
            _mm512_set1_epi32(255));
    __m512i out =
        _mm512_permutex2var_epi8(rounded[0], _mm512_load_si512(kPermute.blue_green), rounded[1]);
    out = _mm512_mask_permutexvar_epi8(out, kRedBytes, _mm512_load_si512(kPermute.red), rounded[2]);
    if (whole) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_castsi512_si128(out));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 16), _mm512_extracti32x4_epi32(out, 1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 32), _mm512_extracti32x4_epi32(out, 2));
    } else {
        _mm512_mask_storeu_epi8(p, bytes, out);
    }
}

CRUCIBLE_TARGET("avx512f,avx512bw,avx512vbmi,avx2,fma")
void jitter_vbmi(std::uint8_t* bgr, std::int64_t pixels, const HsvGains& gains) {
    const __m512 h = _mm512_set1_ps(static_cast<float>(gains.hue));
    const __m512 s = _mm512_set1_ps(static_cast<float>(gains.saturation));
    const __m512 v = _mm512_set1_ps(static_cast<float>(gains.value));
    for (std::int64_t i = 0; i < pixels; i += 16)
        jitter16_vbmi(bgr + 3 * i, static_cast<int>(pixels - i < 16 ? pixels - i : 16), h, s, v);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

CRUCIBLE_TARGET("avx2,fma")
void jitter(std::uint8_t* bgr, std::int64_t pixels, const HsvGains& gains) {
    const Gains8 g{_mm256_set1_ps(static_cast<float>(gains.hue)),
                   _mm256_set1_ps(static_cast<float>(gains.saturation)),
                   _mm256_set1_ps(static_cast<float>(gains.value))};
    std::int64_t i = 0;
    for (; i + 16 <= pixels; i += 16)
        jitter16(bgr + 3 * i, g);
    if (i < pixels) {
        PaddedTail tail(bgr + 3 * i, pixels - i);
        jitter16(tail.block, g);
    }
}

bool cpu_has_avx2_fma() {
    return cpu_features().avx2 && cpu_features().fma;
}

bool cpu_has_avx512f() {
    return cpu_has_avx2_fma() && cpu_features().avx512f;
}

bool cpu_has_avx512_vbmi() {
    return cpu_has_avx512f() && cpu_features().avx512vbmi;
}

}  // namespace

bool hsv_gains_avx512_vbmi(std::uint8_t* bgr, std::int64_t pixels, HsvGains gains) {
    if (!cpu_has_avx512_vbmi()) return false;
    jitter_vbmi(bgr, pixels, gains);
    return true;
}

bool hsv_gains_avx512(std::uint8_t* bgr, std::int64_t pixels, HsvGains gains) {
    if (!cpu_has_avx512f()) return false;
    jitter_avx512(bgr, pixels, gains);
    return true;
}

bool hsv_gains_avx2(std::uint8_t* bgr, std::int64_t pixels, HsvGains gains) {
    if (!cpu_has_avx2_fma()) return false;
    jitter(bgr, pixels, gains);
    return true;
}

#else

bool hsv_gains_avx2(std::uint8_t*, std::int64_t, HsvGains) {
    return false;
}

bool hsv_gains_avx512(std::uint8_t*, std::int64_t, HsvGains) {
    return false;
}

bool hsv_gains_avx512_vbmi(std::uint8_t*, std::int64_t, HsvGains) {
    return false;
}

#endif

}  // namespace crucible::data
