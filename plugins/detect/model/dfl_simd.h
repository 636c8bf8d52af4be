#pragma once
// The CPU kernels of the DFL expectation (plugins/detect/model/yolo_head.h, dfl_expectation)
// with AVX-512, for reg_max = 16: one side's 16 bin logits fill one vector. Logits come as rows
// of 4 sides x 16 bins, row r's 64 floats at logits + r * stride (stride >= 64, so the box part
// of the loss's [B, A, 4 * 16 + nc] predictions is read in place). Each function works on rows
// [begin, end), so callers split rows between threads, and returns false, touching nothing,
// where the CPU (or the compiler: x86-64 only) has no AVX-512.
//
//   forward   p = softmax(logits of a side), d = sum_i p_i * i
//   backward  dlogit_i = dd * p_i * (i - d)
// p is recomputed from the logits in backward.
#include <cstdint>

namespace crucible::detect {

inline constexpr std::int64_t kDflSimdBins = 16;

bool dfl_simd_available();

// distances: rows x 4 floats, contiguous.
bool dfl_expectation_avx512(const float* logits, std::int64_t stride, std::int64_t begin,
                            std::int64_t end, float* distances);

// distances and grad_distances: rows x 4 floats; grad_logits: rows x 64 floats, contiguous.
bool dfl_expectation_backward_avx512(const float* logits, std::int64_t stride,
                                     const float* distances, const float* grad_distances,
                                     std::int64_t begin, std::int64_t end, float* grad_logits);

}  // namespace crucible::detect
