#!/usr/bin/env bash
# CTest `examples.onnx_inference`: builds examples/onnx_inference on its own (as an integrator
# would), exports the reference fixture's detector to ONNX with the crucible CLI, and runs the
# example on an image. Fails if any step fails or the example prints no box.
#   run_example_test.sh CRUCIBLE_CLI FIXTURES_DIR WORK_DIR
set -euo pipefail
cli="$1" fixtures="$2" work="$3"
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$work" && mkdir -p "$work"
cmake -S "$here" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$work/configure.log"
cmake --build "$work/build" >"$work/build.log"
"$cli" export detect model="$fixtures/yolov8/yolov8n_shapes11.pt" format=onnx imgsz=320 \
    out="$work/shapes.onnx"
# The fixture's model trained two epochs on synthetic shapes and scores low: conf 0.001.
"$work/build/onnx_inference" "$work/shapes.onnx" "$here/../../resources/screenshots/0_synthetic_shapes.png" \
    imgsz=320 conf=0.001 | tee "$work/boxes.txt"
boxes=$(grep -c '^class ' "$work/boxes.txt" || true)
[ "$boxes" -gt 0 ] || { echo "the example printed no box"; exit 1; }
echo "examples.onnx_inference: $boxes boxes"
