#!/usr/bin/env bash
# A stand-in for crucible-worker in the checkpoint mirror's restart test: writes one step
# checkpoint of size_mb random MiB (to a temp name, then renamed, as CheckpointStore does), then
# waits delay_ms while obeying control.json (core/base/job_control.h). A resumed run keeps the
# checkpoint it has and succeeds at once. Exit codes as crucible-worker's (core/base/job_state.h).
set -u
if [ "${1:-}" = describe ]; then  # `describe --out FILE`, as crucible-worker
    schemas='{"tasks":[{"task":"test.mirror","title":"mirror","options":[{"name":"size_mb","type":"integer","default":30,"min":1},{"name":"delay_ms","type":"integer","default":60000,"min":0}]}]}'
    if [ "${2:-}" = --out ]; then echo "$schemas" > "$3"; else echo "$schemas"; fi
    exit 0
fi
dir="$2"; resume="${3:-}"
size=$(sed -n 's/.*"size_mb": *\([0-9]*\).*/\1/p' "$dir/spec.json" | head -1); size=${size:-30}
delay=$(sed -n 's/.*"delay_ms": *\([0-9]*\).*/\1/p' "$dir/spec.json" | head -1); delay=${delay:-60000}
events="$dir/events.jsonl"
seq=0; [ -f "$events" ] && seq=$(grep -c . "$events")
emit() { echo "{\"seq\":$seq,\"t\":$(date +%s.%N),\"kind\":\"$1\",$2}" >> "$events"; seq=$((seq+1)); }
emit status '"state":"running"'
ckpt="$dir/checkpoints/step-000000000001.ckpt"
if [ ! -f "$ckpt" ]; then
    head -c $((size * 1048576)) /dev/urandom > "$ckpt.tmp" && mv "$ckpt.tmp" "$ckpt"
    emit checkpoint '"name":"last","step":1'
fi
[ "$resume" = --resume ] && delay=0
end=$(( $(date +%s%3N) + delay ))
while [ "$(date +%s%3N)" -lt "$end" ]; do
    if [ -f "$dir/control.json" ]; then
        req=$(sed -n 's/.*"request": *"\([a-z]*\)".*/\1/p' "$dir/control.json")
        case "$req" in
            cancel) emit status '"state":"canceled","reason":"canceled by the user"'; exit 4 ;;
            pause) emit status '"state":"paused","reason":"paused by the user"'; exit 3 ;;
            checkpoint) emit status '"state":"interrupted","reason":"checkpoint requested"'; exit 5 ;;
        esac
    fi
    sleep 0.05
done
emit status '"state":"succeeded","reason":"finished"'
