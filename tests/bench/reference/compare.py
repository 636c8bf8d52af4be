#!/usr/bin/env python3
"""Runs Crucible's benchmark executables and the reference scripts beside this file, interleaved
(ours, theirs, ours, theirs, ...), with the same thread count, and prints one table:
figure | Crucible | reference | ratio (ratio = Crucible / reference; each figure says whether
higher or lower is better). Writes the same rows, with every round's raw figures, as JSON.
Called by run_all.sh (which picks the Python of the reference venv); see README.md.

  compare.py [--quick] [--build DIR] [--out FILE] [--work DIR] [--threads N] [--rounds R]
             [--seeds 0 1 2] [--only detect_speed detect_map loader llm sd] [--detect-sizes 320 640]
             [--loader-sources 640 1280 2560]
"""
import argparse
import csv
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
ALL = ["detect_speed", "detect_map", "loader", "llm", "sd"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny settings: checks the scripts, measures nothing")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out", default=None, help="JSON results (default $OUT or ./reference_results.json)")
    p.add_argument("--work", default=None, help="scratch folder (default: a new one under $TMPDIR, removed "
                   "at the end unless --keep)")
    p.add_argument("--keep", action="store_true", help="keep the scratch folder (logs, runs, datasets)")
    p.add_argument("--threads", type=int, default=None, help="compute threads on both sides (default: all "
                   "cores, capped at 8)")
    p.add_argument("--rounds", type=int, default=None, help="rounds per side for the speed figures "
                   "(default 2; --quick 1)")
    p.add_argument("--seeds", type=int, nargs="+", default=None, help="40-epoch seeds (default 0 1 2; --quick 0)")
    p.add_argument("--only", nargs="+", choices=ALL, default=ALL)
    p.add_argument("--detect-sizes", type=int, nargs="+", default=None,
                   help="imgsz of the detection speed figures (default 320 640; --quick 320)")
    p.add_argument("--loader-sources", type=int, nargs="+", default=None,
                   help="source JPEG sizes for the loader figures (default 640 1280 2560; --quick 640)")
    return p.parse_args()


ARGS = parse_args()
QUICK = ARGS.quick
THREADS = ARGS.threads or min(8, os.cpu_count() or 1)
ROUNDS = ARGS.rounds or (1 if QUICK else 2)
SEEDS = ARGS.seeds if ARGS.seeds is not None else ([0] if QUICK else [0, 1, 2])
PY = sys.executable
BUILD = os.path.abspath(ARGS.build)
EXE = {
    "cli": os.path.join(BUILD, "app", "cli", "crucible"),
    "bench_train_detect": os.path.join(BUILD, "tests", "detect", "task", "bench_train_detect"),
    "bench_pipeline": os.path.join(BUILD, "tests", "data_pipeline", "bench_pipeline"),
    "bench_llm_step": os.path.join(BUILD, "tests", "llm_lora", "bench_llm_step"),
    "bench_sd_lora": os.path.join(BUILD, "tests", "sd_lora", "bench_sd_lora"),
}
NEEDS = {"detect_speed": ["bench_train_detect"], "detect_map": ["cli"], "loader": ["bench_pipeline"],
         "llm": ["bench_llm_step"], "sd": ["bench_sd_lora"]}

# Tiny settings for --quick; the full settings are the benchmarks' own defaults (see README.md).
S = {
    "detect_sizes": ARGS.detect_sizes or ([320] if QUICK else [320, 640]),
    "detect_train": 32 if QUICK else 256,
    "detect_epochs": 2 if QUICK else 3,
    "map_train": 32 if QUICK else 256,
    "map_val": 16 if QUICK else 64,
    "map_epochs": 2 if QUICK else 40,
    # More images than the loader keeps decoded (RecentImages, ~250 at 640), so that "cache off"
    # really reads from disk on both sides.
    "loader_images": 32 if QUICK else 1024,
    "loader_seconds": 1.0 if QUICK else 4.0,
    "loader_threads": [1] if QUICK else [1, 2],
    # Source JPEG sizes: at 640 nothing is scaled; at 1280 Crucible decodes at 1/2 DCT scale, at
    # 2560 (a 6.5-megapixel photo, what a dataset too large for RAM is often made of) at 1/4.
    "loader_sources": ARGS.loader_sources or ([640] if QUICK else [640, 1280, 2560]),
    "llm": {"steps": 1, "batch": 1, "seq": 64} if QUICK else {"steps": 5, "batch": 4, "seq": 256},
    "sd_steps": 1 if QUICK else 5,
}

WORK = os.path.abspath(ARGS.work or tempfile.mkdtemp(prefix="crucible_reference_"))
os.makedirs(os.path.join(WORK, "logs"), exist_ok=True)
ENV = dict(os.environ, OMP_NUM_THREADS=str(THREADS), MKL_NUM_THREADS=str(THREADS), CUDA_VISIBLE_DEVICES="")
RESULTS = {"rows": [], "raw": {}, "errors": []}
_log_counter = [0]


def say(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(name, cmd, cwd=None, env=None):
    """Runs cmd, its stdout and stderr into logs/NN_name.log; returns (stdout, wall seconds)."""
    _log_counter[0] += 1
    log = os.path.join(WORK, "logs", f"{_log_counter[0]:02d}_{name}.log")
    say(f"{name}: {' '.join(cmd)}")
    t0 = time.perf_counter()
    with open(log, "w") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        r = subprocess.run(cmd, cwd=cwd, env=env or ENV, stdout=subprocess.PIPE, stderr=f, text=True)
        f.write("\n--- stdout ---\n" + r.stdout)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        with open(log) as f:
            tail = f.read()[-3000:]
        raise RuntimeError(f"{name} exited {r.returncode} (log {log}):\n{tail}")
    return r.stdout, wall


def json_lines(text):
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def result_line(text):
    """The benchmark executables' last "RESULT {json}" line, or {} (older builds print none)."""
    found = {}
    for line in text.splitlines():
        if line.startswith("RESULT {"):
            try:
                found = json.loads(line[len("RESULT "):])
            except json.JSONDecodeError:
                pass
    return found


def grab(pattern, text, what, cast=float, group=1):
    m = re.search(pattern, text, re.M)
    if not m:
        raise RuntimeError(f"cannot find {what} in the output:\n{text[-2000:]}")
    return cast(m.group(group))


def row(figure, unit, better, ours, theirs, ours_rounds=None, theirs_rounds=None, note=""):
    ratio = None
    if isinstance(ours, (int, float)) and isinstance(theirs, (int, float)) and theirs:
        ratio = ours / theirs
    RESULTS["rows"].append({"figure": figure, "unit": unit, "better": better, "crucible": ours,
                            "reference": theirs, "ratio": ratio, "crucible_rounds": ours_rounds,
                            "reference_rounds": theirs_rounds, "note": note})


def best(values, better):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return max(values) if better == "higher" else min(values)


def cpu_has_native_bf16():
    """AMX or AVX-512 BF16, where Crucible's amp_dtype=bf16 runs on the CPU's own bf16 units (as
    engine::cpu_has_native_bf16 decides); the reference venv's torch reads the CPU's flags."""
    try:
        import torch
        caps = torch._C._cpu._get_cpu_capability()
        return bool(caps.get("amx_bf16") or caps.get("avx512_bf16"))
    except Exception:  # an older torch without the query: no bf16 row
        return False


# --- detection: steady-state training step --------------------------------------------------
def batch_img_s(batch, step_ms):
    return round(1000.0 * batch / step_ms, 3)


def detect_speed():
    # Ultralytics has no CPU mixed precision (its trainer turns amp off on the CPU), so on a CPU
    # with bf16 units Crucible's bf16 autocast gets its own row against the reference's fp32.
    bf16 = cpu_has_native_bf16()
    ours_bf16 = {s: [] for s in S["detect_sizes"]}
    ours = {s: [] for s in S["detect_sizes"]}
    theirs = {s: [] for s in S["detect_sizes"]}
    raw = RESULTS["raw"].setdefault("detect_speed", [])
    for r in range(ROUNDS):
        for imgsz in S["detect_sizes"]:
            tmp = os.path.join(WORK, f"detect_speed_{imgsz}")
            os.makedirs(tmp, exist_ok=True)
            out, wall = run(f"crucible_detect_speed_{imgsz}_r{r}",
                            [EXE["bench_train_detect"], f"train={S['detect_train']}", f"imgsz={imgsz}", "batch=16",
                             f"epochs={S['detect_epochs']}", f"workers={THREADS}", "loader_threads=1", "cache=true",
                             "close_mosaic=0", "device=cpu"],
                            env=dict(ENV, TMPDIR=tmp))
            res = result_line(out)
            step_ms = res.get("step_ms") or grab(r"^step ([\d.]+) ms = ([\d.]+) img/s", out, "step ms")
            img_s = res.get("img_s") or grab(r"^step ([\d.]+) ms = ([\d.]+) img/s", out, "img/s", group=2)
            threads = res.get("threads") or grab(r"(\d+) CPU threads", out, "threads", int)
            checkpoint_ms = res.get("checkpoint_ms") or grab(r"^checkpoint: ([\d.]+) ms per step", out, "checkpoint")
            phases = grab(r"^time per step in epoch \d+: (.*)$", out, "phases", str)
            ours[imgsz].append({"step_ms": round(step_ms, 2), "img_s": round(img_s, 3), "threads": threads,
                                "device": res.get("device", "cpu"), "checkpoint_ms": round(checkpoint_ms, 2),
                                "phases": phases, "run_wall_s": round(wall, 1)})
            raw.append({"side": "crucible", "round": r, "imgsz": imgsz, **ours[imgsz][-1]})
            if bf16:
                out, wall = run(f"crucible_detect_speed_{imgsz}_bf16_r{r}",
                                [EXE["bench_train_detect"], f"train={S['detect_train']}", f"imgsz={imgsz}",
                                 "batch=16", f"epochs={S['detect_epochs']}", f"workers={THREADS}",
                                 "loader_threads=1", "cache=true", "close_mosaic=0", "device=cpu",
                                 "amp=true", "amp_dtype=bf16"],
                                env=dict(ENV, TMPDIR=tmp))
                res = result_line(out)
                ours_bf16[imgsz].append({"step_ms": round(res["step_ms"], 2), "img_s": round(res["img_s"], 3),
                                         "amp": res.get("amp"), "run_wall_s": round(wall, 1)})
                raw.append({"side": "crucible", "round": r, "imgsz": imgsz, **ours_bf16[imgsz][-1]})
            data = os.path.join(tmp, "crucible_bench_train_detect", "data", "data.yaml")
            out, _ = run(f"reference_detect_speed_{imgsz}_r{r}",
                         [PY, os.path.join(HERE, "detect_reference.py"), "speed", "--data", data, "--imgsz",
                          str(imgsz), "--batch", "16", "--epochs", str(S["detect_epochs"]), "--threads",
                          str(THREADS), "--workers", "1", "--cache", "ram", "--close-mosaic", "0",
                          "--work", os.path.join(WORK, f"ref_speed_{imgsz}")])
            ref = json_lines(out)[-1]
            theirs[imgsz].append(ref)
            raw.append({"round": r, **ref})
    for imgsz in S["detect_sizes"]:
        o = [x["img_s"] for x in ours[imgsz]]
        t = [x["img_s"] for x in theirs[imgsz]]
        note = (f"last of {S['detect_epochs']} epochs, {S['detect_train']} images, batch 16, mosaic on, RAM cache, "
                f"{THREADS} threads + 1 loader; best of {ROUNDS}")
        row(f"detect train step, imgsz {imgsz}", "img/s", "higher", best(o, "higher"), best(t, "higher"), o, t,
            note)
        o = [x["step_ms"] for x in ours[imgsz]]
        t = [x["step_ms"] for x in theirs[imgsz]]
        row(f"detect train step, imgsz {imgsz}", "ms/step", "lower", best(o, "lower"), best(t, "lower"), o, t,
            "Crucible: sum of its training phases; reference: wall from on_train_epoch_start to "
            "on_train_epoch_end / steps; neither holds validation or the epoch-end checkpoint save")
        # The same with Crucible's epoch-end checkpoint (encoding on the trainer's thread) spread
        # over the steps, where the reference's window holds none of its own: against us.
        o = [batch_img_s(16, x["step_ms"] + x["checkpoint_ms"]) for x in ours[imgsz]]
        row(f"detect train step, imgsz {imgsz}, Crucible incl. its epoch-end checkpoint", "img/s", "higher",
            best(o, "higher"), best(t_img := [x["img_s"] for x in theirs[imgsz]], "higher"), o, t_img,
            "Crucible per step: " + ", ".join("%.1f ms" % x["checkpoint_ms"] for x in ours[imgsz]) +
            " of checkpoint; the reference saves after its timed window")
        if bf16:
            o = [x["img_s"] for x in ours_bf16[imgsz]]
            row(f"detect train step, imgsz {imgsz}, Crucible amp_dtype=bf16 vs reference fp32", "img/s", "higher",
                best(o, "higher"), best(t_img := [x["img_s"] for x in theirs[imgsz]], "higher"), o, t_img,
                "this CPU has bf16 units (AMX or AVX-512 BF16); Ultralytics trains fp32 on any CPU")


# --- detection: a whole 40-epoch run --------------------------------------------------------
def last_row(csv_path):
    with open(csv_path) as f:
        rows = [{k.strip(): v.strip() for k, v in r.items()} for r in csv.DictReader(f)]
    return rows[-1], rows


def detect_map():
    raw = RESULTS["raw"].setdefault("detect_map", [])
    bf16 = cpu_has_native_bf16()  # then also Crucible with amp_dtype=bf16: the same mAP?
    per = {"crucible": [], "reference": [], "crucible_bf16": []}
    for seed in SEEDS:
        base = os.path.join(WORK, f"map_seed{seed}")
        shutil.rmtree(base, ignore_errors=True)
        os.makedirs(base)
        data_dir = os.path.join(base, "data")
        run(f"crucible_synth_seed{seed}",
            [EXE["cli"], "dataset", "synth", data_dir, "--train", str(S["map_train"]), "--val", str(S["map_val"]),
             "--classes", "4", "--imgsz", "320", "--seed", str(seed)])
        _, wall = run(f"crucible_train40_seed{seed}",
                      [EXE["cli"], "train", "detect", f"data={data_dir}/data.yaml", "model=yolov8n",
                       f"epochs={S['map_epochs']}", "imgsz=320", "batch=16", f"seed={seed}", f"workers={THREADS}",
                       "loader_threads=1", "device=cpu", "name=crucible", "exist_ok=true"], cwd=base)
        last, rows = last_row(os.path.join(base, "runs", "detect", "crucible", "results.csv"))
        bestrow = max(rows, key=lambda r: float(r["metrics/mAP50-95(B)"]))
        o = {"side": "crucible", "seed": seed, "wall_s": round(wall, 1), "map50": float(last["metrics/mAP50(B)"]),
             "map50_95": float(last["metrics/mAP50-95(B)"]), "best_map50_95": float(bestrow["metrics/mAP50-95(B)"]),
             "epochs": len(rows)}
        per["crucible"].append(o)
        raw.append(o)
        if bf16:
            _, wall = run(f"crucible_train40_bf16_seed{seed}",
                          [EXE["cli"], "train", "detect", f"data={data_dir}/data.yaml", "model=yolov8n",
                           f"epochs={S['map_epochs']}", "imgsz=320", "batch=16", f"seed={seed}",
                           f"workers={THREADS}", "loader_threads=1", "device=cpu", "amp=true", "amp_dtype=bf16",
                           "name=crucible_bf16", "exist_ok=true"], cwd=base)
            last, _ = last_row(os.path.join(base, "runs", "detect", "crucible_bf16", "results.csv"))
            o = {"side": "crucible", "amp": "bf16", "seed": seed, "wall_s": round(wall, 1),
                 "map50": float(last["metrics/mAP50(B)"]), "map50_95": float(last["metrics/mAP50-95(B)"])}
            per["crucible_bf16"].append(o)
            raw.append(o)
        out, ref_wall = run(f"reference_train40_seed{seed}",
                     [PY, os.path.join(HERE, "detect_reference.py"), "map", "--data", f"{data_dir}/data.yaml",
                      "--seed", str(seed), "--epochs", str(S["map_epochs"]), "--imgsz", "320", "--batch", "16",
                      "--threads", str(THREADS), "--workers", "1", "--cache", "off",
                      "--work", os.path.join(base, "reference")])
        t = json_lines(out)[-1]
        t["train_call_wall_s"] = t["wall_s"]  # model.train() alone, without Python's start-up
        t["wall_s"] = round(ref_wall, 1)  # the whole command, as for Crucible's CLI
        per["reference"].append(t)
        raw.append(t)
    note = (f"{S['map_train']} train / {S['map_val']} val synthetic images, imgsz 320, batch 16, "
            f"{S['map_epochs']} epochs, defaults (close_mosaic 10), {THREADS} threads + 1 loader; last epoch")
    for key, unit, better, label in (("wall_s", "s", "lower", "wall time"), ("map50", "mAP50", "higher", "mAP50"),
                                     ("map50_95", "mAP50-95", "higher", "mAP50-95")):
        for i, seed in enumerate(SEEDS):
            row(f"detect {S['map_epochs']} epochs {label}, seed {seed}", unit, better, per["crucible"][i][key],
                per["reference"][i][key], note=note)
        if len(SEEDS) > 1:
            o = [x[key] for x in per["crucible"]]
            t = [x[key] for x in per["reference"]]
            row(f"detect {S['map_epochs']} epochs {label}, mean of seeds {' '.join(map(str, SEEDS))}", unit, better,
                sum(o) / len(o), sum(t) / len(t), o, t, note)
        if bf16:
            o = [x[key] for x in per["crucible_bf16"]]
            t = [x[key] for x in per["reference"]]
            row(f"detect {S['map_epochs']} epochs {label}, Crucible amp_dtype=bf16 vs reference fp32, "
                f"mean of seeds {' '.join(map(str, SEEDS))}", unit, better, sum(o) / len(o), sum(t) / len(t), o, t,
                note + "; Crucible under CPU bf16 autocast")


# --- loader only ----------------------------------------------------------------------------
PIPE_RE = re.compile(r"full pipeline, cache (on|off)\s*, (\d+) threads?\s+wall\s+([\d.]+) img/s.*?"
                     r"per CPU-second\s+([\d.]+) img/s")


def loader():
    raw = RESULTS["raw"].setdefault("loader", [])
    workers = sorted(set([0] + S["loader_threads"]))
    for source in S["loader_sources"]:
        data_dir = os.path.join(WORK, f"pipeline_data_{source}")
        ours, theirs = {}, {}
        for r in range(ROUNDS):
            out, _ = run(f"crucible_pipeline_{source}_r{r}",
                         [EXE["bench_pipeline"], "--images", str(S["loader_images"]), "--seconds",
                          str(S["loader_seconds"]), "--threads", " ".join(map(str, S["loader_threads"])),
                          "--source", str(source), "--dir", data_dir])
            found = PIPE_RE.findall(out)
            if not found:
                raise RuntimeError(f"no 'full pipeline' lines in bench_pipeline's output:\n{out[-2000:]}")
            for cache, threads, wall, cpu in found:
                key = ("ram" if cache == "on" else "off", int(threads))
                ours.setdefault(key, []).append({"img_s": float(wall), "img_per_cpu_s": float(cpu)})
                raw.append({"side": "crucible", "round": r, "source_px": source, "cache": key[0],
                            "threads": key[1], "img_s": float(wall), "img_per_cpu_s": float(cpu)})
            out, _ = run(f"reference_loader_{source}_r{r}",
                         [PY, os.path.join(HERE, "detect_reference.py"), "loader", "--data",
                          os.path.join(data_dir, "data.yaml"), "--imgsz", "640", "--batch", "16", "--workers",
                          *map(str, workers), "--cache", "off", "ram", "--seconds", str(S["loader_seconds"]),
                          "--threads", "1", "--work", os.path.join(WORK, f"ref_loader_{source}")])
            for x in json_lines(out):
                theirs.setdefault((x["cache"], x["workers"]), []).append(x)
                raw.append({"round": r, "source_px": source, **x})
        for cache in ("off", "ram"):
            for threads in S["loader_threads"]:
                o = [x["img_s"] for x in ours.get((cache, threads), [])]
                cru_label = f"{source} px JPEGs, cache " + ("on" if cache == "ram" else "off")
                for w in ([threads, 0] if threads == 1 else [threads]):
                    t = [x["img_s"] for x in theirs.get((cache, w), [])]
                    buf = theirs.get((cache, w), [{}])[0].get("mosaic_buffer")
                    note = (f"imgsz 640, batch 16, mosaic, {S['loader_images']} JPEGs of {source} px; Crucible "
                            f"{threads} loader thread(s), Ultralytics {w} worker process(es)"
                            + (" (in the main process)" if w == 0 else "")
                            + (f"; both draw mosaic partners from the last {buf} images" if cache == "off" and buf
                               else ""))
                    row(f"loader {cru_label}, {threads} thread{'s' if threads > 1 else ''} vs {w} workers",
                        "img/s", "higher", best(o, "higher"), best(t, "higher"), o, t, note)
                o = [x["img_per_cpu_s"] for x in ours.get((cache, threads), [])]
                t = [x["img_per_cpu_s"] for x in theirs.get((cache, threads), [])]
                row(f"loader {cru_label}, {threads} thread{'s' if threads > 1 else ''}, per CPU-second",
                    "img/CPU-s", "higher", best(o, "higher"), best(t, "higher"), o, t,
                    "CPU time of the process (Crucible) / main process + workers (Ultralytics)")


# --- LLM LoRA step --------------------------------------------------------------------------
LLM_RE = {
    "lora": r"^LoRA r=8 \(q,v\):\s+([\d.]+) tokens/s\s+peak RSS\s+([\d.]+) MB",
    "full": r"^full fine-tune:\s+([\d.]+) tokens/s\s+peak RSS\s+([\d.]+) MB",
    "lora_ckpt": r"^LoRA \+ gradient checkpointing:\s+([\d.]+) tokens/s\s+peak RSS\s+([\d.]+) MB",
}


def llm():
    raw = RESULTS["raw"].setdefault("llm", [])
    p = S["llm"]
    ours = {m: [] for m in LLM_RE}
    theirs = {m: [] for m in LLM_RE}
    for r in range(ROUNDS):
        out, _ = run(f"crucible_llm_r{r}", [EXE["bench_llm_step"], f"steps={p['steps']}", f"batch={p['batch']}",
                                           f"seq={p['seq']}", f"threads={THREADS}", "device=cpu", "dtype=fp32"])
        res = result_line(out)
        keys = {"lora": "lora", "full": "full", "lora_ckpt": "lora_checkpointed"}
        for mode, pattern in LLM_RE.items():
            k = keys[mode]
            if f"{k}_tokens_s" in res:
                x = {"tokens_per_s": round(res[f"{k}_tokens_s"], 1), "peak_rss_mb": round(res[f"{k}_peak_mb"], 1)}
            else:
                x = {"tokens_per_s": grab(pattern, out, mode), "peak_rss_mb": grab(pattern, out, mode, group=2)}
            ours[mode].append(x)
            raw.append({"side": "crucible", "round": r, "mode": mode, **x})
        raw.append({"side": "crucible", "round": r, "header": out.splitlines()[0] if out else ""})
        out, _ = run(f"reference_llm_r{r}", [PY, os.path.join(HERE, "llm_reference.py"), "--steps", str(p["steps"]),
                                             "--batch", str(p["batch"]), "--seq", str(p["seq"]), "--threads",
                                             str(THREADS)])
        for x in json_lines(out):
            if "error" in x:
                raise RuntimeError(f"llm_reference.py {x['mode']}: {x['error']}")
            theirs[x["mode"]].append(x)
            raw.append({"round": r, **x})
    names = {"lora": "LoRA r=8 q,v", "full": "full fine-tune", "lora_ckpt": "LoRA + grad checkpointing"}
    for mode in LLM_RE:
        note = (f"stories15M-sized Llama, batch {p['batch']} x seq {p['seq']}, {p['steps']} steps after 1 warm-up, "
                f"{THREADS} threads, fp32; best of {ROUNDS}")
        o = [x["tokens_per_s"] for x in ours[mode]]
        t = [x["tokens_per_s"] for x in theirs[mode]]
        row(f"llm {names[mode]} step", "tokens/s", "higher", best(o, "higher"), best(t, "higher"), o, t, note)
        o = [x["peak_rss_mb"] for x in ours[mode]]
        t = [x["peak_rss_mb"] for x in theirs[mode]]
        base = [x["baseline_rss_mb"] for x in theirs[mode]]
        row(f"llm {names[mode]} peak RSS", "MB", "lower", best(o, "lower"), best(t, "lower"), o, t,
            f"fresh process each; the reference's RSS after importing torch+transformers+peft alone is "
            f"{min(base):.0f} MB")


# --- SD LoRA step ---------------------------------------------------------------------------
SD_RE = re.compile(r"^\s*(\d+) px  (plain|checkpointed):\s+([\d.]+) it/s\s+peak\s+([\d.]+) MB\s+step\s+([\d.]+) MB",
                   re.M)
VAE_RE = re.compile(r"^\s*(\d+) px  VAE encode \(latent cache\):\s+([\d.]+) images/s", re.M)


def sd():
    sd_unet("tiny", "tiny UNet, LoRA r=8 on 72 modules")
    sd_unet("tiny_sdxl", "tiny SDXL-structured UNet (linear projections, depths 1/2, text_time "
                         "conditioning), LoRA r=8 on its 132 modules")


def sd_unet(unet, what):
    raw = RESULTS["raw"].setdefault("sd", [])
    ours, theirs = {}, {}
    tag = "" if unet == "tiny" else " sdxl"
    for r in range(ROUNDS):
        out, _ = run(f"crucible_sd{tag.strip()}_r{r}", [EXE["bench_sd_lora"], f"steps={S['sd_steps']}", "rounds=1",
                                                      f"threads={THREADS}", "device=cpu", "precision=fp32",
                                                      f"unet={unet}"] + ([] if unet == "tiny" else ["train=1"]))
        found = SD_RE.findall(out)
        if not found:
            raise RuntimeError(f"no it/s lines in bench_sd_lora's output:\n{out[-2000:]}")
        for px, kind, it_s, peak, step in found:
            key = ("train", int(px), kind == "checkpointed")
            x = {"it_s": float(it_s), "peak_mb": float(peak), "step_mb": float(step)}
            ours.setdefault(key, []).append(x)
            raw.append({"side": "crucible", "unet": unet, "round": r, "px": int(px), "checkpointing": key[2], **x})
        for px, img_s in (VAE_RE.findall(out) if unet == "tiny" else []):
            ours.setdefault(("vae", int(px), False), []).append({"images_s": float(img_s)})
            raw.append({"side": "crucible", "round": r, "case": "vae_encode", "px": int(px), "images_s": float(img_s)})
        out, _ = run(f"reference_sd{tag.strip()}_r{r}", [PY, os.path.join(HERE, "sd_reference.py"), "--steps",
                                                        str(S["sd_steps"]), "--rounds", "1", "--threads", str(THREADS),
                                                        "--unet", unet] + ([] if unet == "tiny" else ["--no-vae"]))
        for x in json_lines(out):
            key = ("train" if x["case"] == "train" else "vae", x["px"], bool(x.get("checkpointing")))
            theirs.setdefault(key, []).append(x)
            raw.append({"round": r, "unet": unet, **x})
    for key in sorted(ours):
        kind, px, ckpt = key
        o_all, t_all = ours[key], theirs.get(key, [])
        if kind == "train":
            label = f"sd{tag} LoRA step {px} px{' checkpointed' if ckpt else ''}"
            note = (f"{what}, batch 1, {S['sd_steps']} steps after 1 warm-up, "
                    f"{THREADS} threads, same glibc malloc settings; best of {ROUNDS}")
            o = [x["it_s"] for x in o_all]
            t = [x["it_s"] for x in t_all]
            row(label, "it/s", "higher", best(o, "higher"), best(t, "higher"), o, t, note)
            for m, what in (("step_mb", "step memory"), ("peak_mb", "peak memory")):
                o = [x[m] for x in o_all]
                t = [x[m] for x in t_all]
                row(f"{label} {what}", "MB", "lower", best(o, "lower"), best(t, "lower"), o, t,
                    "live CPU tensor bytes (Crucible: counting allocator; reference: profiler allocation records)")
        else:
            o = [x["images_s"] for x in o_all]
            t = [x["images_s"] for x in t_all]
            row(f"sd VAE encode {px} px", "images/s", "higher", best(o, "higher"), best(t, "higher"), o, t,
                f"tiny VAE, batch 1, {S['sd_steps']} encodes after 1 warm-up, no grad")


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        if abs(v) >= 100:
            return f"{v:.0f}" if abs(v) >= 1000 else f"{v:.1f}"
        return f"{v:.3f}" if abs(v) < 10 else f"{v:.2f}"
    return str(v)


def print_table():
    rows = RESULTS["rows"]
    head = ["figure", "Crucible", "reference", "ratio"]
    cells = [[f"{r['figure']} [{r['unit']}, {r['better']} is better]", fmt(r["crucible"]), fmt(r["reference"]),
              ("-" if r["ratio"] is None else f"{r['ratio']:.2f}x")] for r in rows]
    widths = [max(len(head[i]), *(len(c[i]) for c in cells)) if cells else len(head[i]) for i in range(4)]
    line = lambda c: "| " + " | ".join(c[i].ljust(widths[i]) if i == 0 else c[i].rjust(widths[i])  # noqa: E731
                                       for i in range(4)) + " |"
    print(line(head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for c in cells:
        print(line(c))
    print("ratio = Crucible / reference" + (" (--quick: tiny settings, not measurements)" if QUICK else ""))


def versions():
    out = {}
    try:
        import importlib.metadata as md

        for name in ("torch", "ultralytics", "transformers", "peft", "diffusers", "opencv-python"):
            try:
                out[name] = md.version(name)
            except md.PackageNotFoundError:
                pass
    except ImportError:
        pass
    try:
        out["crucible_git"] = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], text=True,
                                             capture_output=True).stdout.strip()
    except OSError:
        pass
    return out


def main():
    missing = [EXE[n] for part in ARGS.only for n in NEEDS[part] if not os.access(EXE[n], os.X_OK)]
    if missing:
        sys.exit("missing Crucible executables (build first):\n  " + "\n  ".join(missing))
    out_path = ARGS.out or os.environ.get("OUT") or "reference_results.json"
    if os.path.isdir(out_path):
        out_path = os.path.join(out_path, "reference_results.json")
    RESULTS["meta"] = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "quick": QUICK,
                       "threads": THREADS, "rounds": ROUNDS, "seeds": SEEDS, "settings": S, "build": BUILD,
                       "host": platform.node(), "cpu_count": os.cpu_count(), "python": platform.python_version(),
                       "versions": versions(), "work": WORK}
    say(f"threads {THREADS}, rounds {ROUNDS}, seeds {SEEDS}{', quick' if QUICK else ''}; logs in {WORK}/logs")
    t0 = time.perf_counter()
    for part in ARGS.only:
        t = time.perf_counter()
        try:
            globals()[part]()
        except Exception as e:  # one broken comparison must not lose the others
            RESULTS["errors"].append({"part": part, "error": str(e)})
            say(f"{part} FAILED: {e}")
        RESULTS["meta"].setdefault("part_seconds", {})[part] = round(time.perf_counter() - t, 1)
        with open(out_path, "w") as f:  # after every part, so an interrupted run keeps what it has
            json.dump(RESULTS, f, indent=1)
    RESULTS["meta"]["total_seconds"] = round(time.perf_counter() - t0, 1)
    with open(out_path, "w") as f:
        json.dump(RESULTS, f, indent=1)
    print_table()
    print(f"JSON: {os.path.abspath(out_path)}; time {RESULTS['meta']['total_seconds']:.0f} s "
          f"({', '.join(f'{k} {v:.0f} s' for k, v in RESULTS['meta']['part_seconds'].items())})")
    for e in RESULTS["errors"]:
        print(f"FAILED {e['part']}: {e['error'].splitlines()[0]}")
    if not ARGS.keep and not ARGS.work and not RESULTS["errors"]:
        shutil.rmtree(WORK, ignore_errors=True)
    elif RESULTS["errors"] or ARGS.keep:
        print(f"logs: {WORK}/logs")
    sys.exit(1 if RESULTS["errors"] else 0)


if __name__ == "__main__":
    main()
