#!/usr/bin/env bash
# The GPU check. On a GPU machine (which builds nothing and may have no apt): run from the
# repository root with the bundle that `bash tests/gpu/pack.sh` made here (.gpu-bundle.tar.xz,
# carried to that machine and unpacked here: binaries built with CUDA, the libraries they need
# beyond LibTorch, fixtures, the Ultralytics wheel). LibTorch comes from that machine's own
# torch 2.11 (python3).
#
#   bash tests/gpu/run.sh            # prints one table, writes $OUT/gpu_check.json (else ./)
#
# GPU half: gpu_tests (golden YOLO loss on CUDA vs CPU, autocast, fused attention, optimizer
# state across devices, device order vs NVML, out-of-memory by type), detection training at 640
# with AMP fp16 and bf16 beside Ultralytics on the same GPU, LLM LoRA bf16 tokens/s, an 8B-class
# LoRA and QLoRA step (tokens/s, peak memory beside dry_run's prediction), SD LoRA fp16
# it/s, an SDXL LoRA step at 1024 px with a bf16 base (it/s, peak beside the prediction), kill and resume on CUDA with deterministic algorithms (bit-identical weights), and with two
# or more GPUs the data-parallel scaling of yolov8s at 640 (efficiency against linear).
# CPU half (always, also here without a GPU, from build/): kill and resume on the CPU and a short
# detection step benchmark, so the plumbing is checked; the table then says the GPU half did not
# run. Budget: under 8 minutes on one H200.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${OUT:-$PWD}"
work="${TMPDIR:-/tmp}/crucible-gpu-check"
rm -rf "$work"
mkdir -p "$work" "$out"
rows="$work/rows.jsonl"
: >"$rows"
started=$(date +%s)

# --- where the binaries and LibTorch are -------------------------------------------------------
bundle="${CRUCIBLE_GPU_BUNDLE:-$root/.gpu-bundle}"
if [ ! -d "$bundle" ] && [ -f "$root/.gpu-bundle.tar.xz" ]; then  # as carried (pack.sh)
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
        "$root/.gpu-bundle.tar.xz" "$root" || { echo "cannot unpack .gpu-bundle.tar.xz"; exit 2; }
fi
if [ -f "$bundle/bin/gpu_tests" ]; then
    bin="$bundle/bin"
    fixtures="$bundle/fixtures"
    export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else  # this machine's build (the CPU half)
    build="${CRUCIBLE_BUILD_DIR:-$root/build}"
    bin="$work/bin"
    mkdir -p "$bin"
    for t in tests/gpu/gpu_tests tests/detect/task/bench_train_detect \
        tests/llm_lora/bench_llm_step tests/llm_lora/bench_qlora_step tests/sd_lora/bench_sd_lora \
        app/cli/crucible; do
        [ -x "$build/$t" ] || { echo "missing $build/$t: build first (bash installer/setup.sh test)"; exit 2; }
        ln -s "$build/$t" "$bin/$(basename "$t")"
    done
    fixtures="${CRUCIBLE_FIXTURES_DIR:-$root/../shared/fixtures}"
fi
python=python3
[ -x "${CRUCIBLE_TORCH_VENV:-$HOME/.cache/crucible/torch-2.11.0}/bin/python" ] &&
    ! python3 -c "import torch" 2>/dev/null &&
    python="${CRUCIBLE_TORCH_VENV:-$HOME/.cache/crucible/torch-2.11.0}/bin/python"
torch_libs=$("$python" - <<'EOF' 2>/dev/null
import glob, os, torch
base = os.path.dirname(torch.__file__)
site = os.path.dirname(base)
dirs = [os.path.join(base, "lib")] + sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib")))
print(":".join(d for d in dirs if os.path.isdir(d)))
EOF
)
[ -n "$torch_libs" ] && export LD_LIBRARY_PATH="$torch_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUDA_DEVICE_ORDER=PCI_BUS_ID  # as the agent sets it for every worker
export CRUCIBLE_GPU_FIXTURES="$fixtures"

gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 &&
    "$python" -c "import torch, sys; sys.exit(not torch.cuda.is_available())" 2>/dev/null; then
    gpu=1
fi
device=cpu
[ "$gpu" = 1 ] && device=0

# row NAME VALUE [REFERENCE] [RATIO] [STATUS]: one line of the table
row() {
    "$python" - "$@" >>"$rows" <<'EOF'
import json, sys
keys = ["check", "crucible", "reference", "ratio", "status"]
print(json.dumps(dict(zip(keys, sys.argv[1:] + [""] * (5 - len(sys.argv[1:]))))))
EOF
}
# result FILE: the JSON after "RESULT " in a benchmark's output
result() { sed -n 's/^RESULT //p' "$1" | tail -1; }
field() { "$python" -c "import json,sys; d=json.loads(sys.argv[1] or '{}'); v=d.get(sys.argv[2]); print('' if v is None else (round(v,2) if isinstance(v,float) else v))" "$1" "$2"; }
ratio() { "$python" -c "import sys; a,b=sys.argv[1:3]; print('%.2fx' % (float(a)/float(b)) if a and b and float(b) else '')" "$1" "$2"; }

# --- kill and resume: bit-identical weights --------------------------------------------------
kill_resume() {  # DEVICE LABEL
    local dev="$1" label="$2" w="$work/resume_$2"
    mkdir -p "$w"
    "$bin/crucible" dataset synth "$w/data" --train 64 --val 16 --classes 4 --imgsz 320 --seed 0 \
        >"$w/synth.log" 2>&1 || { row "kill/resume ($label)" "" "" "" "FAIL: dataset"; return; }
    local opts=(data="$w/data/data.yaml" model=yolov8n epochs=2 imgsz=320 batch=16 seed=0
        device="$dev" deterministic=true workers=4 val=false)
    (cd "$w" && "$bin/crucible" train detect "${opts[@]}" name=straight >"$w/straight.log" 2>&1)
    # Killed by the fault halfway through epoch 2 (the shell's "Killed" notice is dropped).
    (cd "$w" && CRUCIBLE_FAULT=mid_epoch:1 "$bin/crucible" train detect "${opts[@]}" name=killed \
        >"$w/killed.log" 2>&1) 2>/dev/null
    (cd "$w" && "$bin/crucible" train resume="$w/runs/detect/killed" >"$w/resumed.log" 2>&1)
    local a="$w/runs/detect/straight/artifacts/weights/last.safetensors"
    local b="$w/runs/detect/killed/artifacts/weights/last.safetensors"
    local same
    same=$("$python" - "$a" "$b" <<'EOF'
import json, struct, sys
def tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    header.pop("__metadata__", None)
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in header.items()}
try:
    a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
except Exception as e:
    print("missing: %s" % e); sys.exit()
diff = [k for k in a if a[k] != b.get(k)]
print("identical" if a.keys() == b.keys() and not diff else "%d of %d tensors differ" % (len(diff), len(a)))
EOF
)
    if [ "$same" = identical ]; then
        row "kill/resume ($label, deterministic)" "bit-identical weights" "" "" "ok"
    else
        row "kill/resume ($label, deterministic)" "$same" "" "" "FAIL (logs in $w)"
    fi
}

# --- the GPU half ----------------------------------------------------------------------------
if [ "$gpu" = 1 ]; then
    nvidia-smi --query-gpu=index,name,uuid,memory.total,driver_version --format=csv >"$out/gpu_info.csv" 2>&1
    if "$bin/gpu_tests" --gtest_output=json:"$work/gpu_tests.json" >"$work/gpu_tests.log" 2>&1; then
        row "gpu_tests (loss, autocast, attention, devices, OOM)" \
            "$(grep -c '^\[       OK \]' "$work/gpu_tests.log") passed" "" "" "ok"
    else
        row "gpu_tests (loss, autocast, attention, devices, OOM)" \
            "$(grep '^\[  FAILED  \]' "$work/gpu_tests.log" | head -3 | tr '\n' ' ')" "" "" "FAIL"
    fi
    # Ultralytics from the carried wheels, on this machine's torch.
    site="$work/site"
    if ls "$bundle"/wheels/*.whl >/dev/null 2>&1; then
        "$python" -m pip install -q --no-index --no-deps --no-compile --target "$site" \
            "$bundle"/wheels/*.whl >"$work/pip.log" 2>&1
    fi
    # Ours at fp16 and bf16, Ultralytics beside it on the same synthetic images (its AMP is fp16
    # only, so bf16 has no reference).
    for dtype in fp16 bf16; do
        log="$work/detect_$dtype.log"
        mkdir -p "$work/detect_$dtype"
        TMPDIR="$work/detect_$dtype" "$bin/bench_train_detect" train=256 imgsz=640 batch=16 epochs=3 \
            device=0 amp=true amp_dtype=$dtype workers=8 >"$log" 2>&1
        ours=$(result "$log")
        data="$work/detect_$dtype/crucible_bench_train_detect/data/data.yaml"
        ref_json=""
        if [ "$dtype" = fp16 ] && [ -d "$site" ] && [ -f "$data" ]; then
            ref_json=$(PYTHONPATH="$site" timeout 240 "$python" \
                "$root/tests/bench/reference/detect_reference.py" speed --data "$data" --imgsz 640 \
                --batch 16 --epochs 3 --threads 8 --workers 8 --cache ram --device 0 --amp fp16 \
                --work "$work/ultralytics" 2>>"$work/ultralytics_$dtype.log" | tail -1)
        fi
        row "detect 640 AMP $dtype img/s" "$(field "$ours" img_s)" "$(field "$ref_json" img_s)" \
            "$(ratio "$(field "$ours" img_s)" "$(field "$ref_json" img_s)")" \
            "$([ -n "$ours" ] && echo ok || echo FAIL)"
        row "detect 640 AMP $dtype peak GiB" "$(field "$ours" peak_reserved_gib)" \
            "$(field "$ref_json" peak_gib)" "" ""
    done
    log="$work/llm.log"
    "$bin/bench_llm_step" device=cuda dtype=bf16 steps=20 batch=8 seq=256 >"$log" 2>&1
    ours=$(result "$log")
    row "LLM LoRA bf16 tokens/s (stories15M)" "$(field "$ours" lora_tokens_s)" "" "" \
        "$([ -n "$ours" ] && echo ok || echo FAIL)"
    # [B2 8/8] An 8B-class step: Llama 3 8B's shapes with random bf16 weights, LoRA r 16 on every
    # projection, batch 1 x 2048 tokens, with the bf16 base and with NF4 (QLoRA); the peak beside
    # the prediction that dry_run=true prints (status ok within 10 %). PEFT is not on this machine.
    for mode in lora qlora; do
        log="$work/llm8b_$mode.log"
        "$bin/bench_qlora_step" mode=$mode device=cuda steps=5 batch=1 seq=2048 layers=32 \
            hidden=4096 intermediate=14336 heads=32 kv_heads=8 vocab=128256 >"$log" 2>&1
        ours=$(result "$log")
        peak=$(field "$ours" peak_mb)
        predicted=$(field "$ours" predicted_mb)
        ok=$("$python" -c "import sys; a,b=sys.argv[1:3]; print('ok' if a and b and abs(float(a)/float(b)-1) <= 0.10 else 'FAIL')" "$peak" "$predicted")
        row "LLM 8B-class $mode bf16 tokens/s (seq 2048)" "$(field "$ours" tokens_s)" "" "" \
            "$([ -n "$ours" ] && echo ok || echo FAIL)"
        row "LLM 8B-class $mode peak MiB vs predicted" "$peak" "$predicted" \
            "$(ratio "$peak" "$predicted")" "$ok"
    done
    log="$work/sd.log"
    "$bin/bench_sd_lora" device=cuda precision=fp16 unet=sd15 px=512 steps=10 >"$log" 2>&1
    ours=$(result "$log")
    row "SD 1.5 LoRA fp16 it/s (512 px)" "$(field "$ours" it_s)" "" "" \
        "$([ -n "$ours" ] && echo ok || echo FAIL)"
    # SDXL base's UNet (random weights of the real shapes) with a bf16 base at 1024 px: steps a
    # second and peak memory beside the prediction dry_run makes (its UNet share), plain and
    # checkpointed. kohya's SDXL LoRA runs in 8-10 GB.
    log="$work/sdxl.log"
    "$bin/bench_sd_lora" device=cuda precision=bf16 unet=sdxl px=1024 steps=5 >"$log" 2>&1
    ours=$(result "$log")
    for kind in "" checkpointed_; do
        peak=$(field "$ours" ${kind}peak_mb)
        predicted=$(field "$ours" ${kind}predicted_mb)
        ok=$("$python" -c "import sys; a,b=sys.argv[1:3]; print('ok' if a and b and abs(float(a)/float(b)-1) <= 0.10 else 'FAIL')" "$peak" "$predicted")
        row "SDXL LoRA bf16 ${kind:-plain }it/s (1024 px)" "$(field "$ours" ${kind}it_s)" "" "" \
            "$([ -n "$ours" ] && echo ok || echo FAIL)"
        row "SDXL ${kind:-plain }peak MiB vs predicted" "$peak" "$predicted" \
            "$(ratio "$peak" "$predicted")" "$ok"
    done
    kill_resume 0 cuda
    # Data-parallel scaling ([B2 6/8]): yolov8s at 640 on every GPU (one rank each, global batch
    # 16 per GPU) against one GPU with batch 16; NCCL (dist_backend=auto on Linux) and Gloo.
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
    if [ "${gpus:-0}" -ge 2 ] && [ -x "$bin/crucible-worker" ]; then
        "$bin/crucible" dataset synth "$work/scaling/data" --train 512 --val 16 --imgsz 640 \
            >"$work/scaling.log" 2>&1
        scaling_run() {  # NAME DEVICE BATCH [BACKEND]: the last epoch's mean items/s
            (cd "$work/scaling" && "$bin/crucible" train detect data=data/data.yaml \
                model=yolov8s.yaml imgsz=640 epochs=2 batch="$3" device="$2" amp=true val=false \
                dist_backend="${4:-auto}" name="$1" >>"$work/scaling.log" 2>&1)
            "$python" -c "import json,sys; e=[json.loads(l) for l in open(sys.argv[1])]; \
p=[x['items_per_s'] for x in e if x.get('kind')=='progress' and x.get('epoch')==2]; \
print(round(sum(p)/len(p),1) if p else '')" "$work/scaling/runs/detect/$1/events.jsonl"
        }
        one=$(scaling_run one 0 16)
        for backend in nccl gloo; do
            all=$(scaling_run "all_$backend" "$(seq -s, 0 $((gpus - 1)))" $((16 * gpus)) "$backend")
            eff=$("$python" -c "import sys; a,o,n=sys.argv[1:4]; print('%.0f %%' % (100*float(a)/(float(o)*int(n))) if a and o else '')" "$all" "$one" "$gpus")
            row "yolov8s 640 img/s: $gpus GPUs ($backend) / 1 GPU" "$all" "$one" "$eff" \
                "$([ -n "$all" ] && echo ok || echo FAIL)"
        done
    else
        row "multi-GPU scaling" "not run: this machine has ${gpus:-0} GPU" "" "" "skipped"
    fi
else
    row "GPU half" "not run: no CUDA device on this machine" "" "" "skipped"
fi

# --- the CPU half ----------------------------------------------------------------------------
kill_resume cpu cpu
log="$work/detect_cpu.log"
"$bin/bench_train_detect" imgsz=320 batch=16 epochs=2 train=64 device=cpu >"$log" 2>&1
ours=$(result "$log")
row "detect 320 CPU img/s (2 epochs of 64 images)" "$(field "$ours" img_s)" "" "" \
    "$([ -n "$ours" ] && echo ok || echo FAIL)"

# --- the table and the JSON ------------------------------------------------------------------
"$python" - "$rows" "$out/gpu_check.json" "$gpu" "$(($(date +%s) - started))" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
json.dump({"gpu": sys.argv[3] == "1", "seconds": int(sys.argv[4]), "rows": rows},
          open(sys.argv[2], "w"), indent=1)
keys = ["check", "crucible", "reference", "ratio", "status"]
width = {k: max(len(k), *(len(str(r[k])) for r in rows)) for k in keys}
line = lambda r: "| " + " | ".join(str(r[k]).ljust(width[k]) for k in keys) + " |"
print(line({k: k for k in keys}))
print("|" + "|".join("-" * (width[k] + 2) for k in keys) + "|")
for r in rows:
    print(line(r))
print("GPU half: %s; %s s in all" % ("ran" if sys.argv[3] == "1" else "did NOT run (no GPU)",
                                     sys.argv[4]))
EOF
# The logs in one file ($OUT brings back at most 8 files).
(cd "$work" && find . -name '*.log' -not -path './site/*' | tar czf "$out/gpu_check_logs.tgz" -T -) \
    2>/dev/null || true
grep -q '"FAIL' "$rows" && exit 1
exit 0
