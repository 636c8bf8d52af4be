#!/usr/bin/env bash
# Compiles every product source file (core, app, ui, plugins; not the *_posix.cpp halves) for
# Windows with Debian's mingw-w64 cross compiler and the warnings we hold Windows code to:
# -Wall -Wextra -Wshadow -Wconversion -Werror. Header-only and portable C headers of the
# libraries we use are taken from the host, one by one, through a staged include folder (the
# whole of /usr/include would bring glibc into a Windows build).
#
# Files that need LibTorch or Qt cannot be checked here: neither supports mingw-w64 (LibTorch
# builds with MSVC only; Debian has no Qt for mingw). They are counted and listed as excluded,
# and only when the first header missing is one of theirs; any other failure fails the check.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cxx="${MINGW_CXX:-x86_64-w64-mingw32-g++-posix}"
command -v "$cxx" >/dev/null || {
    echo "mingw-w64 compiler $cxx not found (apt-get install g++-mingw-w64-x86-64)"
    exit 1
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
inc="$work/include"
mkdir -p "$inc/openssl" "$inc/curl"
for h in nlohmann spdlog fmt boost CLI yaml-cpp pugixml.hpp pugiconfig.hpp httplib.h sqlite3.h \
    pcre2.h zlib.h zconf.h sentencepiece_processor.h jpeglib.h jmorecfg.h jerror.h; do
    [ -e "/usr/include/$h" ] && ln -s "/usr/include/$h" "$inc/$h"
done
[ -d /usr/include/opencv4/opencv2 ] && ln -s /usr/include/opencv4/opencv2 "$inc/opencv2"
# libjpeg-turbo's configuration header lives in the architecture folder.
[ -e /usr/include/x86_64-linux-gnu/jconfig.h ] && ln -s /usr/include/x86_64-linux-gnu/jconfig.h "$inc/jconfig.h"
# OpenSSL's and curl's headers are split between a common and an architecture folder.
for d in openssl curl; do
    for f in "/usr/include/$d"/* /usr/include/x86_64-linux-gnu/"$d"/*; do
        [ -e "$f" ] && ln -sf "$f" "$inc/$d/"
    done
done

flags=(-std=c++20 -fsyntax-only -Wall -Wextra -Wshadow -Wconversion -Werror
    -D_WIN32_WINNT=0x0A00 -DUNICODE -D_UNICODE
    -DSPDLOG_HEADER_ONLY -DFMT_HEADER_ONLY -DCPPHTTPLIB_OPENSSL_SUPPORT -DCPPHTTPLIB_ZLIB_SUPPORT
    -DCRUCIBLE_VERSION='"check"' -I"$root" -isystem "$inc")
export cxx inc root work
export flags_text="${flags[*]}"

check_one() {  # prints "ok FILE", "excluded FILE HEADER" or "FAIL FILE" plus the errors
    local f="$1" out
    # shellcheck disable=SC2086
    if out="$("$cxx" $flags_text "$root/$f" 2>&1)"; then
        echo "ok $f"
        return
    fi
    local missing
    missing="$(printf '%s\n' "$out" | sed -n 's/.*fatal error: \([^:]*\): No such file.*/\1/p' | head -1)"
    case "$missing" in
    torch/* | ATen/* | c10/* | Q* | qcustomplot.h) echo "excluded $f $missing" ;;
    *)
        echo "FAIL $f"
        printf '%s\n' "$out" | grep -E "error|note: " | head -20 | sed 's/^/    /'
        ;;
    esac
}
export -f check_one

# The Windows SDK's windows.h defines min and max as macros unless NOMINMAX is defined first,
# which breaks std::min and std::max after it (MSVC's C2589). mingw-w64's windows.h defines them
# for C only, so the compile below cannot see it: every file that includes windows.h defines
# NOMINMAX before it (not CMake: -DNOMINMAX and a file's own #define would be MSVC's C4005).
nominmax_missing=$(cd "$root" && git ls-files 'core/*' 'app/*' 'ui/*' 'plugins/*' 'tests/*' |
    grep -E '\.(cpp|h)$' | while read -r f; do
        awk '/^#define NOMINMAX/ { ok = 1 } /^#include <windows\.h>/ { if (!ok) bad = 1; exit }
             END { exit bad ? 0 : 1 }' "$root/$f" && echo "$f"
    done || true)
if [ -n "$nominmax_missing" ]; then
    echo "FAIL: these include <windows.h> without #define NOMINMAX before it:"
    printf '    %s\n' $nominmax_missing
    exit 1
fi

mapfile -t files < <(cd "$root" && git ls-files 'core/*.cpp' 'app/*.cpp' 'ui/*.cpp' 'plugins/*.cpp' |
    grep -v '_posix\.cpp$')
[ ${#files[@]} -gt 0 ] || { echo "no product sources found"; exit 1; }
printf '%s\n' "${files[@]}" | xargs -P "${CHECK_JOBS:-2}" -I{} bash -c 'check_one "$1"' _ {} \
    >"$work/results.txt"

grep -v '^ok \|^excluded ' "$work/results.txt" || true
ok=$(grep -c '^ok ' "$work/results.txt" || true)
excluded=$(grep -c '^excluded ' "$work/results.txt" || true)
failed=$(grep -c '^FAIL ' "$work/results.txt" || true)
echo "mingw-w64 -Wall -Wextra -Wshadow -Wconversion -Werror: $ok files compiled, $failed failed;" \
    "$excluded excluded (they need LibTorch or Qt, which have no mingw-w64 build):"
grep '^excluded ' "$work/results.txt" | awk '{print $3}' | sort | uniq -c | sed 's/^/   /'
[ "$failed" -eq 0 ]
