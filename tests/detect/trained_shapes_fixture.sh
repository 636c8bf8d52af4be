#!/usr/bin/env bash
# The test suite's one trained detector, CTest fixture "trained_shapes": yolov8n, 40 epochs on
# 128 synthetic 96 px images of 2 classes (about 45 s on two cores), for the tests that need a
# model that finds things (the ONNX export's final boxes, the PR-curve drill-down, per-image
# true-positive flags). A model newer than the command line that trains it is reused.
#
#   trained_shapes_fixture.sh CRUCIBLE OUT_DIR
# OUT_DIR/shapes/data.yaml is the dataset, OUT_DIR/runs/train/artifacts/weights/best.safetensors
# the weights.
set -euo pipefail
crucible="$1"
out="$2"
weights="$out/runs/train/artifacts/weights/best.safetensors"
if [ -f "$weights" ] && [ "$weights" -nt "$crucible" ]; then
    echo "reusing $weights"
    exit 0
fi
rm -rf "$out"
mkdir -p "$out"
"$crucible" dataset synth "$out/shapes" --train 128 --val 16 --classes 2 --imgsz 96 --seed 0
"$crucible" train detect data="$out/shapes/data.yaml" model=yolov8n epochs=40 imgsz=96 \
    batch=16 workers=1 seed=0 project="$out/runs" name=train
test -f "$weights"
