#!/usr/bin/env bash
# Compiles every Windows-only platform file (*_windows.cpp) with Debian's mingw-w64 cross
# compiler, so Windows code cannot rot unseen on Linux CI. Platform files include only the C++
# standard library, Windows headers and std-only Crucible headers, so no third-party library
# is needed for the cross compile.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cxx="${MINGW_CXX:-x86_64-w64-mingw32-g++-posix}"
command -v "$cxx" >/dev/null || { echo "mingw-w64 compiler $cxx not found (apt-get install g++-mingw-w64-x86-64)"; exit 1; }
mapfile -t files < <(cd "$root" && git ls-files '*_windows.cpp' 2>/dev/null || find core app ui plugins -name '*_windows.cpp')
[ ${#files[@]} -gt 0 ] || { echo "no *_windows.cpp files found"; exit 1; }
fail=0
for f in "${files[@]}"; do
    if "$cxx" -std=c++20 -Wall -Wextra -Werror -Wno-unused-parameter -D_WIN32_WINNT=0x0A00 -DUNICODE -D_UNICODE \
        -DCRUCIBLE_VERSION='"check"' -I"$root" -c "$root/$f" -o /dev/null; then
        echo "ok   $f"
    else
        echo "FAIL $f"; fail=1
    fi
done
exit $fail
