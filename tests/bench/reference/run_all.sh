#!/usr/bin/env bash
# Crucible against the reference implementations (Ultralytics, transformers + PEFT, diffusers +
# PEFT), each comparison interleaved (ours, theirs, ours, theirs, ...) with the same thread count on
# both sides. Prints one table (figure | Crucible | reference | ratio) and writes the same as JSON
# to $OUT (a file, or a folder to put reference_results.json in) or ./reference_results.json.
#
#   bash tests/bench/reference/run_all.sh [--quick] [compare.py options: --threads N --rounds R
#        --seeds 0 1 2 --only detect_speed detect_map loader llm sd --keep --work DIR]
#
# --quick: tiny settings (a few minutes), to check that everything runs; its figures mean nothing.
# BUILD (default ./build of the repository) holds Crucible's executables; the reference venv is
# ${CRUCIBLE_REFERENCE_VENV:-$HOME/.cache/crucible/reference-2.11.0} (tests/bench/reference/setup_venv.sh).
# Run it on a quiet machine: every figure is a CPU timing. See README.md beside this script.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
venv="${CRUCIBLE_REFERENCE_VENV:-$HOME/.cache/crucible/reference-2.11.0}"
build="${BUILD:-$root/build}"
python="$venv/bin/python"

if [[ ! -x "$python" ]] ||
    ! "$python" -c 'import torch, ultralytics, peft, transformers, diffusers' >/dev/null 2>&1; then
    echo "run_all.sh: the reference venv $venv is missing or incomplete;" \
        "create it with: bash tests/bench/reference/setup_venv.sh" >&2
    exit 1
fi
out="${OUT:-reference_results.json}"
exec "$python" "$here/compare.py" --build "$build" --out "$out" "$@"
