#!/usr/bin/env bash
# A long fuzz campaign, run by hand outside CI: each named libFuzzer target (default: all) for
# RUNS executions (default 10 million) on one core, continuing from the build tree's corpus.
# Prints one line per target: executions, seconds, executions per second, corpus size and
# crashes found (crash files stay in build/tests/fuzz/artifacts/<name>/). Exit status 1 when a
# target crashed.
#   bash tests/fuzz/campaign.sh [--runs N] [name ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=10000000
if [[ "${1:-}" == "--runs" ]]; then
    runs="$2"
    shift 2
fi
bin=build/tests/fuzz/project
if [[ ! -d "$bin" ]]; then
    echo "no fuzz build in $bin: build the main tree first (bash installer/setup.sh test)" >&2
    exit 2
fi
cmake --build "$bin" >/dev/null
names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
    for f in "$bin"/fuzz_*; do
        [[ -x "$f" ]] && names+=("$(basename "$f" | sed 's/^fuzz_//')")
    done
fi
failed=0
printf '%-14s %12s %8s %10s %8s %8s\n' target executions seconds exec/s corpus crashes
for name in "${names[@]}"; do
    work=build/tests/fuzz/corpus/$name
    artifacts=build/tests/fuzz/artifacts/$name
    mkdir -p "$work" "$artifacts"
    dict=()
    [[ -f tests/fuzz/corpus/$name.dict ]] && dict=("-dict=tests/fuzz/corpus/$name.dict")
    log=$(mktemp)
    start=$(date +%s)
    set +e
    "$bin/fuzz_$name" -runs="$runs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$artifacts/" "${dict[@]}" "$work" "tests/fuzz/corpus/$name" >"$log" 2>&1
    rc=$?
    set -e
    seconds=$(($(date +%s) - start))
    done_runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
    crashes=$(find "$artifacts" -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' | wc -l)
    corpus=$(find "$work" -type f | wc -l)
    printf '%-14s %12s %8s %10s %8s %8s\n' "$name" "$done_runs" "$seconds" \
        "$((done_runs / (seconds > 0 ? seconds : 1)))" "$corpus" "$crashes"
    if [[ $rc -ne 0 || $crashes -ne 0 ]]; then
        failed=1
        tail -n 30 "$log" >&2
    fi
    rm -f "$log"
done
exit $failed
