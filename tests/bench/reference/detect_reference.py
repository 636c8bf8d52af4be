#!/usr/bin/env python3
"""The reference side of the detection benchmarks: Ultralytics YOLOv8n (from yolov8n.yaml, no
weights) on a Crucible synthetic dataset, on the CPU (or, for the GPU check, on `--device N` with
`--amp fp16`). Prints one JSON object per line.

  detect_reference.py speed  --data D/data.yaml [--imgsz 320] [--batch 16] [--epochs 3]
                             [--threads 2] [--workers 1] [--close-mosaic 0] [--cache ram]
      Steady-state training step: the last of `epochs` epochs, timed from Ultralytics'
      on_train_epoch_start to on_train_epoch_end (data loading, forward, loss, backward,
      optimizer, EMA; not the end-of-epoch validation and checkpoint).
  detect_reference.py map    --data D/data.yaml --seed S [--epochs 40] [--imgsz 320] [--batch 16]
      A whole training run: wall time, and mAP50 / mAP50-95 of the last row of results.csv.
  detect_reference.py step   [--imgsz 320] [--batch 16] [--iterations 3] [--profile FILE]
      One training step of the model alone (forward, v8 loss, backward) on a random batch with
      6 boxes an image, as build/tests/detect/model/bench_yolo_step times it; NCHW, Ultralytics'
      layout. --profile writes a Chrome trace (ops with input shapes) of one step after a
      warm-up instead; profile_table.py sums it per op.
  detect_reference.py loader --data D/data.yaml [--imgsz 640] [--batch 16] [--workers 0 1 2]
                             [--cache off ram] [--seconds 4]
      The train dataset + dataloader alone (mosaic on, Ultralytics' default augmentation):
      images/s per wall second and per CPU second (main process + its loader workers).

Held equal with Crucible (see README.md): CPU only, `--threads` LibTorch intra-op threads
(Ultralytics would otherwise use min(8, cores - 1)), `--workers` loader worker processes
(Ultralytics forces 0 on the CPU; this script restores the requested count), the default
augmentation, mosaic kept for the whole run when --close-mosaic 0.

Nothing is downloaded: YOLO_OFFLINE is set, the font check is skipped, and every attempt to open
an internet socket raises (so a download attempt fails loudly instead of hanging).
"""
import argparse
import json
import os
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["speed", "map", "loader", "step"])
    p.add_argument("--data", help="data.yaml of a Crucible synthetic dataset (every mode but step)")
    p.add_argument("--iterations", type=int, default=3, help="step: timed steps after one warm-up")
    p.add_argument("--profile", metavar="FILE", help="step: write a trace of one step instead of timing")
    p.add_argument("--imgsz", type=int, default=None, help="default 320 (speed, map) or 640 (loader)")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--epochs", type=int, default=None, help="default 3 (speed) or 40 (map)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    p.add_argument("--workers", type=int, nargs="+", default=None,
                   help="dataloader worker processes (speed/map: one value, default 1; loader: a list, default 0 1)")
    p.add_argument("--cache", nargs="+", default=None,
                   help="speed/map: ram|off (default ram for speed, off for map); loader: list of off|ram (default off)")
    p.add_argument("--close-mosaic", type=int, default=None, help="default 0 (speed) or 10 (map, Ultralytics' default)")
    p.add_argument("--val", choices=["true", "false"], default=None, help="validate every epoch (default: map only)")
    p.add_argument("--deterministic", choices=["true", "false"], default=None,
                   help="torch.use_deterministic_algorithms (default: false for speed, Ultralytics' true for map)")
    p.add_argument("--device", default="cpu", help="cpu (default) or a CUDA index (the GPU check)")
    p.add_argument("--amp", choices=["off", "fp16"], default="off",
                   help="mixed precision on a GPU; Ultralytics' AMP is fp16 only (it has no bf16 option)")
    p.add_argument("--seconds", type=float, default=4.0, help="loader: time per case")
    p.add_argument("--work", default=None, help="folder for runs, settings and the dataset copy (default: a temp dir)")
    p.add_argument("--verbose", action="store_true", help="keep Ultralytics' own log")
    a = p.parse_args()
    if a.mode != "step" and not a.data:
        p.error(f"{a.mode} needs --data")
    return a


ARGS = parse_args()

# --- environment, before torch / ultralytics are imported --------------------------------------
import tempfile  # noqa: E402

WORK = os.path.abspath(ARGS.work or tempfile.mkdtemp(prefix="detect_reference_"))
os.makedirs(WORK, exist_ok=True)
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)  # ultralytics sets 1 when unset
os.environ["MKL_NUM_THREADS"] = str(ARGS.threads)
ON_GPU = ARGS.device != "cpu"
if not ON_GPU:
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
elif ARGS.mode != "speed":
    sys.exit("detect_reference.py: --device is for the speed mode (the GPU check) only")
os.environ["YOLO_OFFLINE"] = "1"
os.environ["YOLO_CONFIG_DIR"] = os.path.join(WORK, "ultralytics_config")  # private settings.json
if not ARGS.verbose:
    os.environ["YOLO_VERBOSE"] = "False"
os.environ.setdefault("MPLBACKEND", "Agg")


def _forbid_internet():
    """Any TCP/UDP connection or DNS look-up raises: nothing may be downloaded."""
    import socket

    def refuse(*_a, **_k):
        raise OSError("detect_reference.py: network access is disabled (offline benchmark)")

    real_connect = socket.socket.connect

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            refuse()
        return real_connect(self, address)

    socket.socket.connect = connect
    socket.socket.connect_ex = lambda self, address: connect(self, address)
    socket.getaddrinfo = refuse
    socket.create_connection = refuse


_forbid_internet()


def _polars_if_missing():
    """The GPU machine has no polars (a 54 MB wheel, too big to carry). Ultralytics only reads its
    own results.csv back with it, inside a try; a module whose readers raise keeps that path."""
    try:
        import polars  # noqa: F401
    except ImportError:
        import types

        def missing(*_a, **_k):
            raise RuntimeError("polars is not installed")

        shim = types.ModuleType("polars")
        shim.read_csv = shim.DataFrame = missing
        sys.modules["polars"] = shim


_polars_if_missing()

import torch  # noqa: E402

torch.set_num_threads(ARGS.threads)

import ultralytics  # noqa: E402
import ultralytics.data.utils as ul_data_utils  # noqa: E402
import ultralytics.utils.torch_utils as ul_torch_utils  # noqa: E402
from ultralytics.utils import SETTINGS  # noqa: E402

# select_device() calls torch.set_num_threads(NUM_THREADS) on the CPU; make it our count.
ul_torch_utils.NUM_THREADS = ARGS.threads
# check_det_dataset() looks for Arial.ttf and downloads it when missing (plots only).
ul_data_utils.check_font = lambda *a, **k: None
if ON_GPU:
    # check_amp() downloads a YOLO checkpoint to compare fp16 with fp32; offline it cannot.
    import ultralytics.engine.trainer as ul_trainer  # noqa: E402

    ul_trainer.check_amp = lambda *a, **k: True
SETTINGS.update({k: False for k in ("sync", "clearml", "comet", "dvc", "hub", "mlflow", "neptune", "raytune",
                                    "tensorboard", "wandb") if k in SETTINGS})


def emit(obj):
    obj = {"side": "reference", "impl": f"ultralytics {ultralytics.__version__}",
           "torch": torch.__version__, "device": ARGS.device, "amp": ARGS.amp, **obj}
    if ON_GPU:
        obj["peak_gib"] = round(torch.cuda.max_memory_reserved() / 2**30, 3)
    print(json.dumps(obj), flush=True)


def dataset_copy(data_yaml):
    """A copy of the dataset with an absolute `path:` (Ultralytics writes labels/*.cache next to the
    labels; the copy keeps Crucible's folder untouched). Returns (yaml path, names)."""
    import shutil

    import yaml

    src = os.path.dirname(os.path.abspath(data_yaml))
    with open(data_yaml) as f:
        cfg = yaml.safe_load(f)
    dst = os.path.join(WORK, "data")
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.cache", "*.npy"))
    names = cfg["names"]
    if isinstance(names, dict):
        names = [names[k] for k in sorted(names)]
    out = {"path": dst, "train": cfg.get("train", "images/train"), "val": cfg.get("val", "images/val"),
           "nc": len(names), "names": {i: n for i, n in enumerate(names)}}
    path = os.path.join(dst, "reference_data.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(out, f, sort_keys=False)
    return path, names


def make_trainer_class(workers):
    from ultralytics.models.yolo.detect import DetectionTrainer

    class Trainer(DetectionTrainer):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            # BaseTrainer sets workers = 0 on the CPU; hold the loader worker count equal.
            self.args.workers = workers

    return Trainer


def train(data, imgsz, epochs, seed, workers, cache, close_mosaic, val, name, deterministic):
    from ultralytics import YOLO

    model = YOLO("yolov8n.yaml")  # from scratch: the architecture only, nothing downloaded
    epochs_seen = {}

    def on_epoch_start(tr):
        epochs_seen[tr.epoch] = {"start": time.perf_counter(), "end": None, "batches": 0}

    def on_batch_end(tr):
        epochs_seen[tr.epoch]["batches"] += 1

    def on_epoch_end(tr):
        epochs_seen[tr.epoch]["end"] = time.perf_counter()

    model.add_callback("on_train_epoch_start", on_epoch_start)
    model.add_callback("on_train_batch_end", on_batch_end)
    model.add_callback("on_train_epoch_end", on_epoch_end)
    t0 = time.perf_counter()
    model.train(trainer=make_trainer_class(workers), data=data, epochs=epochs, imgsz=imgsz, batch=ARGS.batch,
                workers=workers, cache=cache, close_mosaic=close_mosaic, val=val, plots=False, device=ARGS.device,
                seed=seed, deterministic=deterministic, project=os.path.join(WORK, "runs"), name=name,
                exist_ok=True, amp=ARGS.amp == "fp16")
    wall = time.perf_counter() - t0
    return model.trainer, epochs_seen, wall


def speed():
    data, _ = dataset_copy(ARGS.data)
    imgsz, epochs = ARGS.imgsz or 320, ARGS.epochs or 3
    workers = (ARGS.workers or [1])[0]
    cache = (ARGS.cache or ["ram"])[0]
    close_mosaic = 0 if ARGS.close_mosaic is None else ARGS.close_mosaic
    trainer, seen, wall = train(data, imgsz, epochs, ARGS.seed, workers, "ram" if cache == "ram" else False,
                                close_mosaic, ARGS.val == "true", f"speed{imgsz}", ARGS.deterministic == "true")
    last = seen[max(seen)]
    seconds = last["end"] - last["start"]
    images = len(trainer.train_loader.dataset)
    step_ms = 1000.0 * seconds / max(1, last["batches"])
    emit({"mode": "speed", "imgsz": imgsz, "batch": ARGS.batch, "epochs": epochs, "train_images": images,
          "threads": torch.get_num_threads(), "workers": trainer.train_loader.num_workers, "cache": cache,
          "close_mosaic": close_mosaic, "mosaic": trainer.args.mosaic, "deterministic": trainer.args.deterministic,
          "steps": last["batches"],
          "step_ms": round(step_ms, 2), "img_s": round(images / seconds, 3), "run_wall_s": round(wall, 1)})


def model_step():
    from ultralytics.cfg import get_cfg
    from ultralytics.nn.tasks import DetectionModel

    imgsz, b, nc = ARGS.imgsz or 320, ARGS.batch, 4
    torch.manual_seed(0)
    model = DetectionModel("yolov8n.yaml", nc=nc, verbose=False)
    model.args = get_cfg()  # the loss gains (box 7.5, cls 0.5, dfl 1.5), as the trainer sets them
    model.train()
    n = b * 6
    wh = torch.rand(n, 2) * 0.3 + 0.05
    batch = {"img": torch.rand(b, 3, imgsz, imgsz), "batch_idx": torch.arange(b).repeat_interleave(6).float(),
             "cls": torch.randint(0, nc, (n, 1)).float(), "bboxes": torch.cat([wh / 2 + torch.rand(n, 2) * (1 - wh), wh], 1)}

    def one():
        model.zero_grad()
        loss, _ = model.loss(batch)
        loss.sum().backward()

    one()  # warm-up: allocator, oneDNN kernel choice
    if ARGS.profile:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            one()
        prof.export_chrome_trace(ARGS.profile)
        emit({"mode": "step", "imgsz": imgsz, "batch": b, "trace": ARGS.profile})
        return
    t0 = time.perf_counter()
    for _ in range(ARGS.iterations):
        one()
    step_ms = 1000.0 * (time.perf_counter() - t0) / ARGS.iterations
    emit({"mode": "step", "imgsz": imgsz, "batch": b, "threads": torch.get_num_threads(),
          "step_ms": round(step_ms, 2), "img_s": round(1000.0 * b / step_ms, 3)})


def read_results_csv(path):
    import csv

    with open(path) as f:
        rows = [{k.strip(): v.strip() for k, v in row.items()} for row in csv.DictReader(f)]
    return rows


def map_run():
    data, _ = dataset_copy(ARGS.data)
    imgsz, epochs = ARGS.imgsz or 320, ARGS.epochs or 40
    workers = (ARGS.workers or [1])[0]
    cache = (ARGS.cache or ["off"])[0]
    close_mosaic = 10 if ARGS.close_mosaic is None else ARGS.close_mosaic
    val = ARGS.val != "false"
    trainer, seen, wall = train(data, imgsz, epochs, ARGS.seed, workers, "ram" if cache == "ram" else False,
                                close_mosaic, val, f"map_seed{ARGS.seed}", ARGS.deterministic != "false")
    rows = read_results_csv(os.path.join(trainer.save_dir, "results.csv"))
    last = rows[-1]
    best = max(rows, key=lambda r: float(r["metrics/mAP50-95(B)"]))
    emit({"mode": "map", "seed": ARGS.seed, "imgsz": imgsz, "batch": ARGS.batch, "epochs": epochs,
          "threads": torch.get_num_threads(), "workers": workers, "cache": cache, "close_mosaic": close_mosaic,
          "deterministic": trainer.args.deterministic, "wall_s": round(wall, 1), "map50": float(last["metrics/mAP50(B)"]),
          "map50_95": float(last["metrics/mAP50-95(B)"]), "best_map50_95": float(best["metrics/mAP50-95(B)"]),
          "best_epoch": int(float(best["epoch"])), "results_csv": os.path.join(str(trainer.save_dir), "results.csv")})


def cpu_seconds(pids):
    """utime + stime of these processes (Linux /proc), in seconds."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            pass
    return total


def loader():
    from ultralytics.cfg import get_cfg
    from ultralytics.data import build_dataloader, build_yolo_dataset

    data, names = dataset_copy(ARGS.data)
    imgsz = ARGS.imgsz or 640
    root = os.path.dirname(data)
    img_path = os.path.join(root, "images", "train")
    data_dict = {"names": {i: n for i, n in enumerate(names)}, "nc": len(names), "channels": 3}
    for cache in ARGS.cache or ["off"]:
        for workers in ARGS.workers if ARGS.workers is not None else [0, 1]:
            cfg = get_cfg(overrides={"imgsz": imgsz, "cache": "ram" if cache == "ram" else False, "task": "detect",
                                     "mode": "train", "close_mosaic": 0})
            dataset = build_yolo_dataset(cfg, img_path, ARGS.batch, data_dict, mode="train")
            dl = build_dataloader(dataset, ARGS.batch, workers, shuffle=True, rank=-1, device="cpu")
            # InfiniteDataLoader forks its workers on the first iteration; start them here (the
            # clock starts right after, so their start-up and first batches are counted).
            t_start = time.perf_counter()
            if getattr(dl, "iterator", None) is None and hasattr(dl, "_get_iterator"):
                dl.iterator = dl._get_iterator()
            pids = [os.getpid()] + [w.pid for w in getattr(dl.iterator, "_workers", [])]
            images, sink, epochs = 0, 0, 0
            t0 = time.perf_counter()
            c0 = cpu_seconds(pids)
            while time.perf_counter() - t0 < ARGS.seconds:
                for b in dl:
                    images += b["img"].shape[0]
                    sink += int(b["img"].view(-1)[b["img"].numel() // 2])
                epochs += 1
            wall = time.perf_counter() - t0
            cpu = cpu_seconds(pids) - c0
            emit({"mode": "loader", "imgsz": imgsz, "batch": ARGS.batch, "images": len(dataset),
                  "cache": cache, "workers": dl.num_workers, "epochs": epochs, "seconds": round(wall, 2),
                  "img_s": round(images / wall, 2), "img_per_cpu_s": round(images / cpu, 2) if cpu > 0 else None,
                  "mosaic": cfg.mosaic, "mosaic_buffer": dataset.max_buffer_length,
                  "worker_start_s": round(t0 - t_start, 3)})
            if hasattr(dl, "close"):
                dl.close()
            del dl, dataset


if __name__ == "__main__":
    {"speed": speed, "map": map_run, "loader": loader, "step": model_step}[ARGS.mode]()
