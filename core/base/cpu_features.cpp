#include "core/base/cpu_features.h"

#if defined(_MSC_VER) && !defined(__clang__) && defined(_M_X64)
#include <intrin.h>
#define CRUCIBLE_CPUID_MSVC 1
#elif (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <cpuid.h>
#define CRUCIBLE_CPUID_GNU 1
#endif

namespace crucible {
namespace {

constexpr bool bit(std::uint32_t reg, int n) {
    return ((reg >> n) & 1u) != 0;
}

#if defined(CRUCIBLE_CPUID_MSVC)

CpuidRegisters cpuid(std::uint32_t leaf, std::uint32_t subleaf) {
    int r[4] = {};
    __cpuidex(r, static_cast<int>(leaf), static_cast<int>(subleaf));
    return {static_cast<std::uint32_t>(r[0]), static_cast<std::uint32_t>(r[1]),
            static_cast<std::uint32_t>(r[2]), static_cast<std::uint32_t>(r[3])};
}

std::uint64_t xcr0() {
    return _xgetbv(0);
}

#elif defined(CRUCIBLE_CPUID_GNU)

CpuidRegisters cpuid(std::uint32_t leaf, std::uint32_t subleaf) {
    CpuidRegisters r;
    __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
    return r;
}

// xgetbv without the xsave target attribute that _xgetbv needs under GCC; the caller has checked
// OSXSAVE, so the instruction exists.
std::uint64_t xcr0() {
    std::uint32_t low = 0, high = 0;
    __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
    return (static_cast<std::uint64_t>(high) << 32) | low;
}

#endif

}  // namespace

CpuFeatures decode_cpu_features(const CpuidReadings& r) {
    CpuFeatures f;
    if (r.max_leaf < 1) return f;
    // The OS saves the AVX state (XCR0 bits 1 and 2, SSE and the upper YMM halves), and for
    // AVX-512 also the opmask and ZMM state (bits 5 to 7).
    const bool osxsave = bit(r.leaf1.ecx, 27);
    const bool ymm_saved = osxsave && (r.xcr0 & 0x6) == 0x6;
    const bool zmm_saved = ymm_saved && (r.xcr0 & 0xE0) == 0xE0;
    const bool avx = ymm_saved && bit(r.leaf1.ecx, 28);
    f.fma = avx && bit(r.leaf1.ecx, 12);
    if (r.max_leaf < 7) return f;
    f.avx2 = avx && bit(r.leaf7.ebx, 5);
    f.avx512f = avx && zmm_saved && bit(r.leaf7.ebx, 16);
    f.avx512bw = f.avx512f && bit(r.leaf7.ebx, 30);
    f.avx512vbmi = f.avx512bw && bit(r.leaf7.ecx, 1);  // its byte ops take BW's masks
    // Sub-leaf 1 exists when sub-leaf 0's eax says so.
    f.avx512bf16 = f.avx512f && r.leaf7.eax >= 1 && bit(r.leaf7_1.eax, 5);
    return f;
}

CpuidReadings read_cpuid() {
    CpuidReadings r;
#if defined(CRUCIBLE_CPUID_MSVC) || defined(CRUCIBLE_CPUID_GNU)
    r.max_leaf = cpuid(0, 0).eax;
    if (r.max_leaf >= 1) r.leaf1 = cpuid(1, 0);
    if (r.max_leaf >= 7) {
        r.leaf7 = cpuid(7, 0);
        if (r.leaf7.eax >= 1) r.leaf7_1 = cpuid(7, 1);
    }
    if (bit(r.leaf1.ecx, 27)) r.xcr0 = xcr0();
#endif
    return r;
}

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = decode_cpu_features(read_cpuid());
    return features;
}

}  // namespace crucible
