#!/usr/bin/env bash
# A stand-in for crucible-worker in the agent tests: honours --job DIR [--resume], writes
# DESIGN.md events with gap-free seq, appends what the agent posts to inbox/ (see
# core/jobs/job_events.h), obeys control.json requests, writes an artifact. Its
# "checkpoint" is the last completed step, kept in DIR/checkpoints/last. It exits with
# crucible-worker's codes (core/base/job_state.h): 0 succeeded, 3 paused, 4 canceled,
# 5 interrupted; 7 (or FAKE_WORKER_CRASH_CODE) for the simulated crash.
set -u
# `describe` publishes the schema of the fake task (tests/agent/agent_test_util.h has the same).
if [ "${1:-}" = describe ]; then
    schemas='{"tasks":[{"task":"test.fake","title":"fake","options":[{"name":"steps","type":"integer","default":20,"min":1},{"name":"delay_ms","type":"integer","default":30,"min":0},{"name":"data","type":"path","default":""},{"name":"model","type":"path","default":""},{"name":"device","type":"string","default":""}]}]}'
    if [ "${2:-}" = --out ]; then echo "$schemas" > "$3"; else echo "$schemas"; fi
    exit 0
fi
dir="$2"; resume="${3:-}"
events="$dir/events.jsonl"
steps=$(sed -n 's/.*"steps": *\([0-9]*\).*/\1/p' "$dir/spec.json" | head -1); steps=${steps:-20}
delay=$(sed -n 's/.*"delay_ms": *\([0-9]*\).*/\1/p' "$dir/spec.json" | head -1); delay=${delay:-30}
seq=0; [ -f "$events" ] && seq=$(grep -c . "$events")
# What the agent told CUDA about GPUs, for the tests to read.
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset} CUDA_DEVICE_ORDER=${CUDA_DEVICE_ORDER-unset}" > "$dir/gpu_env"
emit() { echo "{\"seq\":$seq,\"t\":$(date +%s.%N),\"kind\":\"$1\",$2}" >> "$events"; seq=$((seq+1)); }
start=1
if [ "$resume" = --resume ] && [ -f "$dir/checkpoints/last" ]; then
    done_step=$(cat "$dir/checkpoints/last"); start=$((done_step+1))
    emit rollback "\"to_step\":$done_step"
fi
emit status '"state":"running"'
for ((i=start; i<=steps; i++)); do
    emit metric "\"epoch\":0,\"step\":$i,\"values\":{\"train/loss\":$(( 1000 / i ))}"
    echo "$i" > "$dir/checkpoints/last.tmp" && mv "$dir/checkpoints/last.tmp" "$dir/checkpoints/last"
    # The agent's events for this job (alarms) wait in inbox/ while the worker owns the log.
    for f in "$dir"/inbox/*.json; do
        [ -f "$f" ] || continue
        body=$(cat "$f"); body=${body#\{}
        echo "{\"seq\":$seq,$body" >> "$events"; seq=$((seq+1)); rm -f "$f"
    done
    if [ -f "$dir/control.json" ]; then
        req=$(sed -n 's/.*"request": *"\([a-z]*\)".*/\1/p' "$dir/control.json")
        case "$req" in
            cancel) emit status '"state":"canceled","reason":"canceled by the user"'; exit 4 ;;
            pause) emit status '"state":"paused","reason":"paused by the user"'; exit 3 ;;
            checkpoint) emit status '"state":"interrupted","reason":"checkpoint requested"'; exit 5 ;;
        esac
    fi
    [ "${FAKE_WORKER_CRASH_AT:-0}" = "$i" ] && { echo "boom: simulated crash" >&2; exit "${FAKE_WORKER_CRASH_CODE:-7}"; }
    sleep "$(awk "BEGIN{print $delay/1000}")"
done
mkdir -p "$dir/artifacts"
head -c 100000 /dev/urandom > "$dir/artifacts/best.safetensors"
emit artifact '"name":"best.safetensors","type":"weights"'
emit status '"state":"succeeded","reason":"finished"'
