#pragma once
// The CPU kernels of batch norm + SiLU in training (core/engine/bn_silu.h) with AVX-512, on
// channels-last activations seen as `rows` rows of `channels` floats, row r starting at
// data + r * stride (stride >= channels: a channel slice of a wider tensor is read in place).
// Each function works on rows [begin, end), so callers split rows between threads. `channels` is
// a multiple of 16. Every function returns false, touching nothing, where the CPU (or the
// compiler: x86-64 only) has no AVX-512; the caller then takes LibTorch's separate ops.
//
// With per-channel scale = weight / sqrt(var + eps) and shift = bias (x - mean comes first, so a
// mean large against the spread loses no digits):
//   forward   z = (x - mean) * scale + shift,  y = z * sigmoid(z)
//   backward  dz = dy * s * (1 + z * (1 - s)), s = sigmoid(z), xhat = (x - mean) * invstd;
//             sums of dz and dz * xhat per channel, then
//             dx = (dz - mean(dz) - xhat * mean(dz * xhat)) * weight * invstd.
// z and s are recomputed from x in backward, so z is never stored; dz is written once by the
// first backward pass and turned into dx by the second.
#include <cstdint>

namespace crucible::engine {

struct ChannelRows {
    const float* data = nullptr;
    std::int64_t stride = 0;  // floats from one row to the next
};

// Whether the functions below run for `channels` on this CPU.
bool bn_silu_avx512_available(std::int64_t channels);

// Adds each channel's sum and sum of squares of x - pivot over rows [begin, end) to sum[c] and
// squares[c]. A pivot near the mean (any row's values) keeps the variance, squares / rows -
// (sum / rows)^2, from cancelling away when the mean is large against the spread.
bool bn_silu_stats_avx512(ChannelRows x, std::int64_t channels, std::int64_t begin,
                          std::int64_t end, const float* pivot, double* sum, double* squares);

// y (rows of `channels`, contiguous) = silu((x - mean) * scale + shift) for rows [begin, end).
bool bn_silu_forward_avx512(ChannelRows x, std::int64_t channels, std::int64_t begin,
                            std::int64_t end, const float* mean, const float* scale,
                            const float* shift, float* y);

// Adds each channel's sum of dz and of dz * xhat over rows [begin, end), and writes each dz to
// `dz` (rows of `channels`, contiguous) for the second pass.
bool bn_silu_backward_sums_avx512(ChannelRows dy, ChannelRows x, std::int64_t channels,
                                  std::int64_t begin, std::int64_t end, const float* scale,
                                  const float* shift, const float* mean, const float* invstd,
                                  double* sum_dz, double* sum_dz_xhat, float* dz);

// Turns the first pass's dz into dx in place for rows [begin, end), given per channel
// mean_dz = sum_dz / rows, mean_dz_xhat = sum_dz_xhat / rows and gain = weight * invstd.
bool bn_silu_backward_dx_avx512(ChannelRows x, std::int64_t channels, std::int64_t begin,
                                std::int64_t end, const float* mean, const float* invstd,
                                const float* mean_dz, const float* mean_dz_xhat, const float* gain,
                                float* dz_then_dx);

}  // namespace crucible::engine
