#pragma once
// The x86-64 instruction sets our hand-written SIMD paths choose between at run time
// (core/data/augment/hsv_simd.cpp, core/engine/nf4_simd.cpp), read once from CPUID for every
// compiler: GCC and Clang through <cpuid.h>, MSVC through __cpuidex and _xgetbv. A set counts only
// when the operating system also saves its registers (XCR0), as GCC's __builtin_cpu_supports
// requires, so a vector path never runs where a context switch would lose its state.
//
// CRUCIBLE_TARGET("avx2,fma") marks a function that uses those instructions: GCC and Clang
// (clang-cl too) compile its intrinsics only with the attribute; MSVC takes them anywhere.
#include <cstdint>

#if defined(__GNUC__) || defined(__clang__)
#define CRUCIBLE_TARGET(isa) __attribute__((target(isa)))
#else
#define CRUCIBLE_TARGET(isa)
#endif

namespace crucible {

struct CpuFeatures {
    bool avx2 = false;
    bool fma = false;
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512bf16 = false;
    bool avx512vbmi = false;  // with AVX-512F and BW, which every use of it needs
};

// The raw CPUID registers the decoding reads: leaf 1, leaf 7 sub-leaves 0 and 1, and XCR0.
struct CpuidRegisters {
    std::uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};
struct CpuidReadings {
    std::uint32_t max_leaf = 0;  // leaf 0's eax
    CpuidRegisters leaf1, leaf7, leaf7_1;
    std::uint64_t xcr0 = 0;  // read only where leaf 1 says OSXSAVE
};

// What the readings say, the operating system's part included; pure, so tests can feed it any
// CPU.
CpuFeatures decode_cpu_features(const CpuidReadings& readings);

// This CPU's readings (all zero off x86-64).
CpuidReadings read_cpuid();

// This CPU's features, read on first use.
const CpuFeatures& cpu_features();

}  // namespace crucible
