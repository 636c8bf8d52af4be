#include "core/data/augment/resize_simd.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include "core/base/cpu_features.h"
#define CRUCIBLE_RESIZE_VBMI 1
#endif

namespace crucible::data {
namespace {

// Horizontal fractions of a pixel in 1/64: a weight pair (64 - w, w) fits the signed bytes of
// vpmaddubsw, and 255 * 64 the 16-bit sums. Vertical ones in 1/32768, mulhrs's Q15.
constexpr int kFractionBits = 6;
constexpr int kOne = 1 << kFractionBits;
constexpr int kVerticalBits = 15;
constexpr int kBlockPixels = 16;  // output pixels a block makes: 48 bytes, 48 16-bit sums
constexpr int kBlockValues = 3 * kBlockPixels;
constexpr int kWindowBytes = 128;  // what a block reads: two vectors from its first pixel's

// One block's horizontal pass: output value j (pixel j / 3, channel j % 3) is the pair of source
// bytes at pair[2 j] and pair[2 j + 1] of the window (values 0-31 from the first table, 32-47
// from the second), times the weights at the same places.
struct Block {
    std::uint8_t pair[2][64];
    std::int8_t weight[2][64];
};

struct BlockLoad {
    std::int64_t first_byte;  // the window's offset in the source row
    std::uint64_t masks[2];   // the window bytes inside the row, per vector
};

// Source position and weight (in 1 << bits) of output coordinate `x`: cv::resize's INTER_LINEAR
// mapping, clamped to the edge pixel; the weight is below 1 << bits.
struct Sample {
    int index = 0, weight = 0;
};

Sample sample_at(int x, int src_size, int dst_size, int bits) {
    const double position =
        (x + 0.5) * static_cast<double>(src_size) / static_cast<double>(dst_size) - 0.5;
    if (position < 0) return {0, 0};         // (position >= -0.5: the edge pixel)
    int index = static_cast<int>(position);  // the floor, position being >= 0
    double fraction = position - index;
    if (index >= src_size - 1) index = src_size - 1, fraction = 0;
    const int one = 1 << bits;
    int weight = static_cast<int>(fraction * one + 0.5);
    if (weight == one) ++index, weight = 0;  // only where index < src_size - 1
    return {index, weight};
}

constexpr std::size_t round_up64(std::size_t n) {
    return (n + 63) / 64 * 64;
}

int block_count(int dst_width) {
    return (dst_width + kBlockPixels - 1) / kBlockPixels;
}

// A row buffer holds every block's 48 sums, and 32 more for the last vector of the vertical pass.
std::size_t row_buffer_bytes(int blocks) {
    return round_up64((static_cast<std::size_t>(blocks) * kBlockValues + 32) * 2);
}

}  // namespace

std::size_t bilinear_scratch_bytes(int dst_width) {
    const int blocks = block_count(dst_width < 1 ? 1 : dst_width);
    return round_up64(blocks * sizeof(Block)) + round_up64(blocks * sizeof(BlockLoad)) +
           2 * row_buffer_bytes(blocks);
}

#ifdef CRUCIBLE_RESIZE_VBMI
namespace {

#define CRUCIBLE_VBMI CRUCIBLE_TARGET("avx512f,avx512bw,avx512vbmi,avx2")

// GCC 12 warns that the undefined upper half of a cast between 256 and 512 bits may be used
// uninitialized; only the lower half is ever used. (Clang and MSVC would warn of the pragma.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

// The tables of every block for this pair of widths; false where a block's window is too small.
bool build_blocks(int src_width, int dst_width, Block* blocks, BlockLoad* loads) {
    const int count = block_count(dst_width);
    const std::int64_t row_bytes = 3 * static_cast<std::int64_t>(src_width);
    for (int b = 0; b < count; ++b) {
        Block& block = blocks[b];
        const int first_pixel = b * kBlockPixels;
        const std::int64_t first_byte =
            3 * sample_at(first_pixel, src_width, dst_width, kFractionBits).index;
        for (int j = 0; j < kBlockValues; ++j) {
            const int x = first_pixel + j / 3, channel = j % 3;
            const int table = j / 32, at = 2 * (j % 32);
            int left = 0, right = 0, weight = 0;
            if (x < dst_width) {
                const Sample s = sample_at(x, src_width, dst_width, kFractionBits);
                left = static_cast<int>(3 * s.index + channel - first_byte);
                right = left + (s.weight > 0 ? 3 : 0);
                weight = s.weight;
            }
            if (right >= kWindowBytes) return false;
            block.pair[table][at] = static_cast<std::uint8_t>(left);
            block.pair[table][at + 1] = static_cast<std::uint8_t>(right);
            block.weight[table][at] = static_cast<std::int8_t>(kOne - weight);
            block.weight[table][at + 1] = static_cast<std::int8_t>(weight);
        }
        for (int at = 2 * (kBlockValues - 32); at < 64; ++at) {  // the second table's unused half
            block.pair[1][at] = 0;
            block.weight[1][at] = 0;
        }
        BlockLoad& load = loads[b];
        load.first_byte = first_byte;
        for (int v = 0; v < 2; ++v) {
            const std::int64_t inside = row_bytes - first_byte - 64 * v;
            load.masks[v] = inside >= 64 ? ~std::uint64_t{0}
                            : inside > 0 ? (std::uint64_t{1} << inside) - 1
                                         : 0;
        }
    }
    return true;
}

// One source row through the horizontal pass: 16-bit sums (64 times the interpolated value).
CRUCIBLE_VBMI void horizontal(const std::uint8_t* row, const Block* blocks, const BlockLoad* loads,
                              int count, std::int16_t* out) {
    for (int b = 0; b < count; ++b) {
        const std::uint8_t* window = row + loads[b].first_byte;
        // Masked: bytes past the row are never touched (nor fault).
        const __m512i low = _mm512_maskz_loadu_epi8(loads[b].masks[0], window);
        const __m512i high = _mm512_maskz_loadu_epi8(loads[b].masks[1], window + 64);
        __m512i sums[2];
        for (int t = 0; t < 2; ++t) {
            const __m512i pairs =
                _mm512_permutex2var_epi8(low, _mm512_load_si512(blocks[b].pair[t]), high);
            sums[t] = _mm512_maddubs_epi16(pairs, _mm512_load_si512(blocks[b].weight[t]));
        }
        std::int16_t* to = out + static_cast<std::ptrdiff_t>(b) * kBlockValues;
        _mm512_storeu_si512(to, sums[0]);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + 32), _mm512_castsi512_si256(sums[1]));
    }
}

// One output row: the two rows' sums blended by the vertical weight (Q15, below 32768: mulhrs's
// rounded product of (bottom - top) and it), rounded to bytes.
CRUCIBLE_VBMI void vertical(const std::int16_t* top, const std::int16_t* bottom, int weight,
                            int values, std::uint8_t* out) {
    const __m512i q15 = _mm512_set1_epi16(static_cast<std::int16_t>(weight));
    const __m512i half = _mm512_set1_epi16(kOne / 2);
    for (int k = 0; k < values; k += 32) {
        const __m512i a = _mm512_loadu_si512(top + k);
        const __m512i b = _mm512_loadu_si512(bottom + k);
        const __m512i blended =
            _mm512_add_epi16(a, _mm512_mulhrs_epi16(_mm512_sub_epi16(b, a), q15));
        const __m512i bytes16 = _mm512_srli_epi16(_mm512_add_epi16(blended, half), kFractionBits);
        const __m256i bytes = _mm512_maskz_cvtepi16_epi8(0xFFFFFFFFu, bytes16);
        if (k + 32 <= values) {
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + k), bytes);
        } else {
            const __mmask64 tail = (__mmask64{1} << (values - k)) - 1;
            _mm512_mask_storeu_epi8(out + k, tail, _mm512_castsi256_si512(bytes));
        }
    }
}

// The two most recent source rows through the horizontal pass; output rows go down the source,
// so each source row is computed once.
class RowCache {
  public:
    RowCache(std::int16_t* a, std::int16_t* b) : buffers_{a, b} {}

    // Row `y`'s sums, keeping row `keep` if it is one of the two.
    template <class Compute>
    const std::int16_t* get(int y, int keep, Compute&& compute) {
        for (int i = 0; i < 2; ++i)
            if (rows_[i] == y) return buffers_[i];
        const int slot = rows_[0] == keep ? 1 : 0;
        compute(y, buffers_[slot]);
        rows_[slot] = y;
        return buffers_[slot];
    }

  private:
    std::int16_t* buffers_[2];
    int rows_[2] = {-1, -1};
};

CRUCIBLE_VBMI void resize(const BgrPixels& src, std::uint8_t* dst, int dst_width, int dst_height,
                          std::size_t dst_step, const Block* blocks, const BlockLoad* loads,
                          std::int16_t* buffer_a, std::int16_t* buffer_b) {
    const int count = block_count(dst_width);
    const auto compute = [&](int y, std::int16_t* out) {
        horizontal(src.data + static_cast<std::size_t>(y) * src.step, blocks, loads, count, out);
    };
    RowCache rows(buffer_a, buffer_b);
    const int values = 3 * dst_width;
    for (int y = 0; y < dst_height; ++y) {
        const Sample s = sample_at(y, src.height, dst_height, kVerticalBits);
        const int below = s.weight > 0 ? s.index + 1 : s.index;
        const std::int16_t* top = rows.get(s.index, below, compute);
        const std::int16_t* bottom = rows.get(below, s.index, compute);
        vertical(top, bottom, s.weight, values, dst + static_cast<std::size_t>(y) * dst_step);
    }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace

bool resize_bgr_bilinear(const BgrPixels& src, std::uint8_t* dst, int dst_width, int dst_height,
                         std::size_t dst_step, void* scratch) {
    if (!cpu_features().avx512vbmi || src.width < 1 || src.height < 1 || dst_width < 1 ||
        dst_height < 1)
        return false;
    if (src.width == dst_width && src.height == dst_height) return false;  // a copy: the caller's
    const int count = block_count(dst_width);
    auto* bytes = static_cast<std::uint8_t*>(scratch);
    auto* blocks = reinterpret_cast<Block*>(bytes);
    bytes += round_up64(count * sizeof(Block));
    auto* loads = reinterpret_cast<BlockLoad*>(bytes);
    bytes += round_up64(count * sizeof(BlockLoad));
    auto* buffer_a = reinterpret_cast<std::int16_t*>(bytes);
    auto* buffer_b = reinterpret_cast<std::int16_t*>(bytes + row_buffer_bytes(count));
    if (!build_blocks(src.width, dst_width, blocks, loads)) return false;
    resize(src, dst, dst_width, dst_height, dst_step, blocks, loads, buffer_a, buffer_b);
    return true;
}

#else

bool resize_bgr_bilinear(const BgrPixels&, std::uint8_t*, int, int, std::size_t, void*) {
    return false;
}

#endif

}  // namespace crucible::data
