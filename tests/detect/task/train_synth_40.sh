#!/usr/bin/env bash
# The long detection check (not in CI): yolov8n from scratch on `crucible dataset synth` data,
# 256 train / 64 val images at 320 px, 4 shape classes, batch 16, seed 0, 40 epochs — the setup
# in which the reference trainer reaches mAP50 ≈ 0.66 and mAP50-95 ≈ 0.49 on a comparable set.
# Prints the mAP curve from results.csv and the final figures.
#
#   tests/detect/task/train_synth_40.sh [BUILD_DIR=build] [extra key=value options...]
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
build="${1:-$root/build}"
shift || true
cli="$build/app/cli/crucible"
work="${CRUCIBLE_BENCH_DIR:-${TMPDIR:-/tmp}/crucible-synth40}"
rm -rf "$work"
mkdir -p "$work"
"$cli" dataset synth "$work/data" --train 256 --val 64 --classes 4 --imgsz 320 --seed 0
cd "$work"
start=$(date +%s)
"$cli" train detect data="$work/data/data.yaml" model=yolov8n epochs=40 imgsz=320 batch=16 \
    seed=0 name=synth40 "$@"
end=$(date +%s)
csv="$work/runs/detect/synth40/results.csv"
echo
echo "epoch  mAP50   mAP50-95"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { gsub(/ /, "", $i); col[$i] = i } next }
         { printf "%5d  %.4f  %.4f\n", $1, $(col["metrics/mAP50(B)"]), $(col["metrics/mAP50-95(B)"]) }' "$csv"
echo "wall time: $((end - start)) s for 40 epochs"
