// core/base/cpu_features.h: the decoding of CPUID and XCR0 against a table of CPUs (an instruction
// set counts only where the operating system saves its registers), and this machine's reading
// against the compiler's own check where the compiler has one (GCC and Clang), so the reading
// that MSVC builds also use is checked on every x86-64 machine the suite runs on.
#include "core/base/cpu_features.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace crucible;

namespace {

constexpr std::uint32_t kOsxsave = 1u << 27, kAvx = 1u << 28, kFma = 1u << 12;
constexpr std::uint32_t kAvx2 = 1u << 5, kAvx512f = 1u << 16, kAvx512bw = 1u << 30;
constexpr std::uint32_t kAvx512vbmi = 1u << 1;  // leaf 7, ecx
constexpr std::uint32_t kAvx512bf16 = 1u << 5;  // leaf 7 sub-leaf 1, eax
constexpr std::uint64_t kYmmState = 0x7, kZmmState = 0xE7;

// A Sapphire Rapids-like CPU: everything, and an OS that saves it all.
CpuidReadings everything() {
    CpuidReadings r;
    r.max_leaf = 0x20;
    r.leaf1.ecx = kOsxsave | kAvx | kFma;
    r.leaf7.eax = 1;  // sub-leaf 1 exists
    r.leaf7.ebx = kAvx2 | kAvx512f | kAvx512bw;
    r.leaf7.ecx = kAvx512vbmi;
    r.leaf7_1.eax = kAvx512bf16;
    r.xcr0 = kZmmState;
    return r;
}

struct Case {
    std::string name;
    CpuidReadings readings;
    CpuFeatures expected;
};

std::vector<Case> cases() {
    std::vector<Case> out;
    out.push_back({"everything", everything(), {true, true, true, true, true, true}});
    out.push_back({"all zero (not x86, or an unknown CPU)", CpuidReadings{}, {}});
    {
        auto r = everything();
        r.max_leaf = 1;  // leaf 7 absent: its registers are not to be believed
        out.push_back({"only leaf 1", r, {false, true, false, false, false}});
    }
    {
        auto r = everything();
        r.leaf1.ecx &= ~kOsxsave;  // the OS does not use XSAVE: no AVX state is kept
        out.push_back({"no OSXSAVE", r, {}});
    }
    {
        auto r = everything();
        r.xcr0 = kYmmState;  // AVX saved, AVX-512 not (an OS or hypervisor that turned it off)
        out.push_back({"AVX-512 not saved by the OS", r, {true, true, false, false, false}});
    }
    {
        auto r = everything();
        r.xcr0 = 0x3;  // x87 and SSE only
        out.push_back({"YMM not saved by the OS", r, {}});
    }
    {
        auto r = everything();
        r.leaf1.ecx &= ~kAvx;  // AVX2 and FMA bits without AVX itself
        out.push_back({"no AVX", r, {}});
    }
    {
        auto r = everything();
        r.leaf7.ebx = kAvx2;
        r.leaf7_1.eax = 0;
        out.push_back({"AVX2 + FMA (Haswell to Alder Lake)", r, {true, true, false, false, false}});
    }
    {
        auto r = everything();
        r.leaf7.ebx = kAvx2 | kAvx512bw;  // BW without F cannot run
        out.push_back({"AVX-512BW without F", r, {true, true, false, false, false}});
    }
    {
        auto r = everything();
        r.leaf7.eax = 0;  // sub-leaf 1 absent: its bits are not to be believed
        out.push_back({"no sub-leaf 1", r, {true, true, true, true, false, true}});
    }
    {
        auto r = everything();
        r.leaf7.ebx = kAvx2 | kAvx512bw;
        r.leaf7_1.eax = kAvx512bf16;
        out.push_back({"BF16 and VBMI without AVX-512F", r, {true, true, false, false, false}});
    }
    {
        auto r = everything();
        r.leaf7.ecx = 0;  // Skylake-SP and Cascade Lake: AVX-512 without VBMI
        out.push_back({"AVX-512 without VBMI", r, {true, true, true, true, true, false}});
    }
    {
        auto r = everything();
        r.leaf7.ebx = kAvx2 | kAvx512f;  // VBMI's byte ops need BW's masks
        out.push_back({"VBMI without AVX-512BW", r, {true, true, true, false, true, false}});
    }
    return out;
}

std::string describe(const CpuFeatures& f) {
    return std::string("avx2=") + (f.avx2 ? "1" : "0") + " fma=" + (f.fma ? "1" : "0") +
           " avx512f=" + (f.avx512f ? "1" : "0") + " avx512bw=" + (f.avx512bw ? "1" : "0") +
           " avx512bf16=" + (f.avx512bf16 ? "1" : "0") +
           " avx512vbmi=" + (f.avx512vbmi ? "1" : "0");
}

}  // namespace

TEST(CpuFeatures, DecodesATableOfCpus) {
    for (const Case& c : cases()) {
        EXPECT_EQ(describe(decode_cpu_features(c.readings)), describe(c.expected)) << c.name;
    }
}

TEST(CpuFeatures, AgreesWithTheCompilersOwnCheckOnThisMachine) {
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
    const CpuFeatures& f = cpu_features();
    const CpuFeatures compiler{
        __builtin_cpu_supports("avx2") != 0,       __builtin_cpu_supports("fma") != 0,
        __builtin_cpu_supports("avx512f") != 0,    __builtin_cpu_supports("avx512bw") != 0,
        __builtin_cpu_supports("avx512bf16") != 0, __builtin_cpu_supports("avx512vbmi") != 0};
    EXPECT_EQ(describe(f), describe(compiler));
    EXPECT_NE(read_cpuid().max_leaf, 0u);  // every x86-64 CPU has leaf 1
#else
    GTEST_SKIP() << "the compiler has no __builtin_cpu_supports to compare with (MSVC, or not "
                    "x86-64); DecodesATableOfCpus still runs";
#endif
}
