#!/usr/bin/env bash
# Makes the bundle tests/gpu/run.sh needs on a GPU machine, which builds nothing: .gpu-bundle/
# (git-ignored) with
#   bin/       gpu_tests, bench_train_detect, bench_llm_step, bench_sd_lora, crucible (stripped),
#              built here with CUDA for Ampere, Hopper and Blackwell (TORCH_CUDA_ARCH_LIST)
#   lib/       the shared libraries they need beyond LibTorch, CUDA and the C/C++ runtime
#              (OpenCV, yaml-cpp, spdlog/fmt, PCRE2, ICU, ...), which the GPU machine lacks
#   fixtures/  the golden YOLO loss cases
#   wheels/    Ultralytics for the side-by-side detection figure (the GPU machine has torch)
# At most 64 MiB may travel with the working tree: the script prints the bundle's size and fails
# above 56 MiB (the tree itself takes the rest).
#
#   bash tests/gpu/pack.sh [BUILD_DIR=build]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
bundle="$root/.gpu-bundle"
targets=(gpu_tests bench_train_detect bench_llm_step bench_sd_lora crucible)
cmake --build "$build" --target "${targets[@]}" -j "$(nproc)"
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/fixtures/yolov8" "$bundle/wheels"
for t in "${targets[@]}"; do
    exe=$(find "$build" -type f -name "$t" -perm -u+x | head -1)
    [ -n "$exe" ] || { echo "pack: $t not built" >&2; exit 1; }
    strip --strip-unneeded -o "$bundle/bin/$t" "$exe"
done
# Libraries: what ldd resolves, less LibTorch and CUDA (from the GPU machine's torch) and the
# C/C++ runtime every Linux has.
skip='lib(torch|c10|cuda|cudart|cublas|cudnn|nccl|nvrtc|nvToolsExt|nvJitLink|cusparse|cufft|curand|cusolver|cupti|nvshmem|gomp|shm|caffe2)|/libc\.so|/libm\.so|/libstdc\+\+|/libgcc_s|/ld-linux|/libpthread|/libdl\.|/librt\.'
for exe in "$bundle"/bin/*; do
    ldd "$exe" | awk '/=> \// { print $3 }'
done | sort -u | grep -Ev "$skip" | while read -r lib; do
    cp -L "$lib" "$bundle/lib/"
done
strip --strip-unneeded "$bundle"/lib/*.so* 2>/dev/null || true
shared="${CRUCIBLE_SHARED_DIR:-$root/../shared}"
cp "$shared"/fixtures/yolov8/loss_case*_inputs.safetensors "$shared"/fixtures/yolov8/loss_case*_expected.json \
    "$bundle/fixtures/yolov8/"
# Ultralytics for the GPU machine's Python 3.12 (its other needs are there already).
ref_requirements="$root/tests/bench/reference/requirements.txt"
ultra=$(grep -E '^ultralytics(-thop)?==' "$ref_requirements" 2>/dev/null || true)
if [ -n "$ultra" ]; then
    # shellcheck disable=SC2086
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
        --platform any -d "$bundle/wheels" $ultra ||
        echo "pack: could not download the Ultralytics wheels; the reference column stays empty"
fi
size=$(du -sm "$bundle" | cut -f1)
echo "bundle: $bundle, $size MiB"
du -sh "$bundle"/* | sed 's/^/  /'
if [ "$size" -gt 56 ]; then
    echo "pack: the bundle is over 56 MiB; it would not travel with the tree" >&2
    exit 1
fi
