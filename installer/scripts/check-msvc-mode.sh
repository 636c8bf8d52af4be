#!/usr/bin/env bash
# The files whose code differs under MSVC (its own CPUID intrinsics, SIMD intrinsics without GCC's
# target attributes, no GCC pragmas), syntax-checked by clang in MSVC mode with __clang__ and
# __GNUC__ undefined, so they take the branch MSVC takes. This stands in for MSVC, which does not
# run here; it is not MSVC: clang still accepts GCC's vector operators (a + b on __m256), which
# MSVC rejects, so those files use the intrinsic functions only. Only the few standard headers
# these files use are provided, as thin stand-ins for MSVC's library (-nostdinc++).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
clang="${CLANG_CXX:-clang++}"
command -v "$clang" >/dev/null || {
    echo "$clang not found (apt-get install clang)"
    exit 1
}

files=(
    core/base/cpu_features.cpp
    core/data/augment/hsv_simd.cpp
    core/data/augment/resize_simd.cpp
    core/engine/bn_silu_simd.cpp
    plugins/detect/model/dfl_simd.cpp
    plugins/detect/model/upsample_simd.cpp
)

shim="$(mktemp -d)"
trap 'rm -rf "$shim"' EXIT
cat >"$shim/cstdint" <<'EOF'
#pragma once
#include <stdint.h>
namespace std {
using ::int8_t; using ::int16_t; using ::int32_t; using ::int64_t;
using ::uint8_t; using ::uint16_t; using ::uint32_t; using ::uint64_t;
}
EOF
cat >"$shim/cstddef" <<'EOF'
#pragma once
namespace std {
using size_t = decltype(sizeof 0);
using ptrdiff_t = decltype((char*)0 - (char*)0);
}
EOF
cat >"$shim/cstring" <<'EOF'
#pragma once
#include <cstddef>
namespace std {
inline void* memcpy(void* d, const void* s, size_t n) { return __builtin_memcpy(d, s, n); }
}
EOF

# MSVC compiles AVX-512 and AVX2 intrinsics in any function; clang needs the ISA enabled for the
# whole file instead. -mxsave: MSVC's _xgetbv needs no flag either.
flags=(--target=x86_64-pc-windows-msvc -fms-compatibility -fms-extensions -ffreestanding
    -nostdinc++ -isystem "$shim" -std=c++20 -fsyntax-only -Wall -Wextra -Werror
    -mxsave -mavx512f -mavx512bw -mavx512vbmi -mavx2 -mfma -U__clang__ -U__GNUC__ -I"$root")
failed=0
for f in "${files[@]}"; do
    # The MSVC branch must be the one compiled: the file names _MSC_VER, and with __clang__ and
    # __GNUC__ gone nothing GCC-only is left on.
    grep -q "_MSC_VER\|CRUCIBLE_TARGET\|_M_X64" "$root/$f" || {
        echo "FAIL $f: it has no MSVC branch to check"
        failed=1
        continue
    }
    if ! out="$("$clang" "${flags[@]}" "$root/$f" 2>&1)"; then
        echo "FAIL $f"
        printf '%s\n' "$out" | head -20 | sed 's/^/    /'
        failed=1
    fi
done
if [ "$failed" -ne 0 ]; then
    exit 1
fi
echo "clang in MSVC mode (__clang__, __GNUC__ undefined): ${#files[@]} files, MSVC branches compiled"
