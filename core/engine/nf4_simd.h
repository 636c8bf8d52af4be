#pragma once
// The CPU's fast path for dequantizing NF4 (core/engine/nf4.cpp): whole 64-value blocks with
// AVX-512, where the compiler can target it (GCC and Clang on x86-64; nf4_simd.cpp) and the CPU
// has it at run time. Each block's 16 scaled levels sit in one register and every code picks its
// value with a permute, 16 values at a time; the values equal the portable loop's (the same fp32
// product, rounded to bf16 to nearest even).
#include <cstdint>

namespace crucible::engine {

// Blocks [begin, end) of `packed` (32 bytes a block) scaled by `absmax`, written to `out` at
// value begin·64 as bf16 (`bf16`) or fp32. False, writing nothing, where AVX-512 is not there.
bool nf4_blocks_avx512(const std::uint8_t* packed, const float* absmax, const float* levels,
                       std::int64_t begin, std::int64_t end, void* out, bool bf16);

}  // namespace crucible::engine
