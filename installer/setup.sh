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

# Only the -dev packages we use (not libopencv-dev, which drags in Qt5, VTK and GDAL). LibTorch
# is not among them: it comes from PyPI's torch wheel (below).
packages=(
    cmake ninja-build g++ pkg-config git ccache python3 python3-venv
    qt6-base-dev libqcustomplot-dev
    libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev libopencv-dnn-dev
    libjpeg62-turbo-dev
    libsqlite3-dev nlohmann-json3-dev libcpp-httplib-dev libssl-dev zlib1g-dev libcurl4-openssl-dev
    libspdlog-dev libcli11-dev libyaml-cpp-dev libpugixml-dev libpcre2-dev libicu-dev libboost-dev
    libgloo-dev
    libsentencepiece-dev
)
if [ "$mode" = test ]; then
    # GoogleTest/Benchmark (and its sources, cross-compiled for the wine tests); clang + its
    # runtime for the libFuzzer targets; mingw-w64 to compile the product for Windows and wine64
    # to run its Windows platform tests; clang-format for the style check; Xvfb for GUI tests.
    packages+=(libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev clang-format
               googletest g++-mingw-w64-x86-64 wine64 xvfb xauth)
    # makensis: the test installer.nsis builds the Windows installer from a staged folder.
    packages+=(nsis)
else
    packages+=(libgtest-dev libbenchmark-dev)
fi

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing ${#missing[@]} Debian packages: ${missing[*]}"
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ensure_venv DIR CHECK WHAT PACKAGE...: a virtual environment this script owns, made again
# (PACKAGEs from PyPI) unless its Python runs CHECK (a one-line program) with exit status 0.
ensure_venv() {
    local venv="$1" check="$2" what="$3"
    shift 3
    "$venv/bin/python" -c "$check" >/dev/null 2>&1 && return 0
    echo "== installing $what into $venv"
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar off "$@"
}

# LibTorch 2.x with CUDA: PyPI's torch wheel (headers, CMake config and libraries, with the CUDA
# libraries it needs as nvidia-* wheels) in a virtual environment this script owns. It lives
# outside the build folder, so a clean build or a fresh clone reuses it.
torch_version=2.11.0
torch_venv="${CRUCIBLE_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/crucible/torch-$torch_version}"
torch_python="$torch_venv/bin/python"
ensure_venv "$torch_venv" \
    "import torch, sys; sys.exit(not torch.__version__.startswith('$torch_version'))" \
    "LibTorch $torch_version (PyPI torch wheel with its CUDA libraries, ~4.6 GB)" \
    "torch==$torch_version"

# ccache: a rebuild after a clean (or CI's fresh clone, or the LibTorch-free build below) reuses
# what was compiled before. Paths are taken relative to the checkout so another clone hits too.
export CCACHE_BASEDIR="$root"
export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-20G}"
export CCACHE_NOHASHDIR=1
# LibTorch's CMake files need the CUDA toolkit of its own CUDA version (13.0) to configure.
cuda_root="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -x "$cuda_root/bin/nvcc" ]; then
    echo "setup: the CUDA 13.0 toolkit is not at $cuda_root (no bin/nvcc). Install NVIDIA's" \
        "cuda-toolkit-13-0 (nvcc, cuBLAS, cuDNN and NCCL headers) or point CUDA_HOME at it." >&2
    exit 1
fi
export PATH="$cuda_root/bin:$PATH"

# The checkpoint mirror's tests upload to a real S3-compatible server on loopback: moto in server
# mode (PyPI's moto[server]), in a virtual environment of its own beside the torch wheel's.
test_configure=()
if [ "$mode" = test ]; then
    moto_version=5.2.5
    moto_venv="${CRUCIBLE_MOTO_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/crucible/moto-$moto_version}"
    ensure_venv "$moto_venv" \
        "import moto, os, sys; sys.exit(moto.__version__ != '$moto_version' or not os.access('$moto_venv/bin/moto_server', os.X_OK))" \
        "moto $moto_version (an S3-compatible test server)" "moto[server]==$moto_version"
    test_configure=(-DCRUCIBLE_MOTO_SERVER="$moto_venv/bin/moto_server")

    # The ONNX export's tests run each exported model in ONNX Runtime too, and through the ONNX
    # checker (tests/detect/export/onnx_runtime_run.py): PyPI's onnxruntime and onnx, in a virtual
    # environment of their own.
    onnxruntime_version=1.32.0
    onnx_version=1.23.2
    onnx_venv="${CRUCIBLE_ONNX_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/crucible/onnxruntime-$onnxruntime_version}"
    ensure_venv "$onnx_venv" \
        "import onnx, onnxruntime, sys; sys.exit(onnxruntime.__version__ != '$onnxruntime_version' or onnx.__version__ != '$onnx_version')" \
        "onnxruntime $onnxruntime_version and onnx $onnx_version (test tooling)" \
        "onnxruntime==$onnxruntime_version" "onnx==$onnx_version"
    test_configure+=(-DCRUCIBLE_ONNX_PYTHON="$onnx_venv/bin/python")
fi

configure() {  # configure BUILD_DIR [cmake args...]: idempotent, a no-op when nothing changed
    local dir="$1"
    shift
    cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache "$@"
}
echo "== configuring ($build)"
configure "$build" -DCRUCIBLE_TORCH_PYTHON="$torch_python" ${test_configure[@]+"${test_configure[@]}"}
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

# A workstation's build: the studio and the agent without LibTorch (CRUCIBLE_WITH_TORCH=OFF).
# Built here so it cannot rot; its link check shows neither executable needs LibTorch or CUDA.
studio_build="$build-studio-only"
echo "== configuring and building the studio-only build ($studio_build)"
configure "$studio_build" -DCRUCIBLE_WITH_TORCH=OFF -DCRUCIBLE_BUILD_FUZZ=OFF \
    -DCRUCIBLE_BUILD_BENCHMARKS=OFF
cmake --build "$studio_build" -j "$jobs" --target crucible-studio crucible-agent link_deps_tests
"$studio_build/tests/layers/link_deps_tests"

echo "== running the test suite"
cd "$build"
# Two cores: tests that use several threads hold the CTest resource lock "cpu".
ctest -j 2 --output-on-failure --timeout 900
