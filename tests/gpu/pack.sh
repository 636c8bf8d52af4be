#!/usr/bin/env bash
# Makes the bundle tests/gpu/run.sh needs on a GPU machine, which builds nothing: .gpu-bundle/,
# packed as .gpu-bundle.tar.xz to travel (both git-ignored), with
#   bin/       gpu_tests, bench_train_detect, bench_llm_step, bench_qlora_step, bench_sd_lora, crucible (stripped),
#              built here with CUDA for Ampere, Hopper and Blackwell (TORCH_CUDA_ARCH_LIST)
#   lib/       the shared libraries they need beyond LibTorch, CUDA and the C/C++ runtime
#              (OpenCV, yaml-cpp, PCRE2, ...), which the GPU machine lacks; stubs for the
#              decoders OpenCV links and we never use (bundle_libs.py)
#   fixtures/  the golden YOLO loss cases
#   wheels/    Ultralytics for the side-by-side detection figure (the GPU machine has torch)
# At most 64 MiB may travel with the working tree: the script prints the packed size and fails
# above 56 MiB (the tree itself takes the rest).
#
#   bash tests/gpu/pack.sh [BUILD_DIR=build]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
bundle="$root/.gpu-bundle"
# crucible-worker beside crucible: `crucible train ... device=0,1` starts it once per rank.
targets=(gpu_tests bench_train_detect bench_llm_step bench_qlora_step bench_sd_lora crucible
    crucible-worker)
cmake --build "$build" --target "${targets[@]}" -j "$(nproc)"
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/fixtures/yolov8" "$bundle/wheels"
for t in "${targets[@]}"; do
    exe=$(find "$build" -type f -name "$t" -perm -u+x | head -1)
    [ -n "$exe" ] || { echo "pack: $t not built" >&2; exit 1; }
    strip --strip-unneeded -o "$bundle/bin/$t" "$exe"
done
# Libraries: what the binaries need beyond LibTorch, CUDA and the C/C++ runtime (the GPU machine's
# torch wheel has those), with stubs for the GDAL, GDCM and OpenEXR decoders that Debian's OpenCV
# links and we never call (bundle_libs.py says why).
python3 "$root/tests/gpu/bundle_libs.py" "$bundle/lib" "$bundle"/bin/*
strip --strip-unneeded "$bundle"/lib/*.so* 2>/dev/null || true
# Every symbol must resolve from the bundle, LibTorch and the C runtime, as it will there.
torch_python=$(sed -n 's/^CRUCIBLE_TORCH_PYTHON:[A-Z]*=//p' "$build/CMakeCache.txt")
torch_lib=$("${torch_python:-python3}" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
for exe in "$bundle"/bin/*; do
    if LD_LIBRARY_PATH="$bundle/lib:$torch_lib" ldd -r "$exe" 2>&1 | grep -E "undefined symbol|not found"; then
        echo "pack: $(basename "$exe") does not link from the bundle" >&2
        exit 1
    fi
done
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
# It travels packed: ICU's data and the binaries shrink to about a third.
archive="$root/.gpu-bundle.tar.xz"
tar -C "$root" -cf - .gpu-bundle | xz -T0 -6 >"$archive"
echo "bundle: $bundle, $(du -sm "$bundle" | cut -f1) MiB unpacked"
du -sh "$bundle"/* | sed 's/^/  /'
size=$(du -sm "$archive" | cut -f1)
echo "packed: $archive, $size MiB (run the check with carry [\".gpu-bundle.tar.xz\"])"
if [ "$size" -gt 56 ]; then
    echo "pack: the packed bundle is over 56 MiB; it would not travel with the tree" >&2
    exit 1
fi
