#!/usr/bin/env python3
"""Sums a Chrome trace of LibTorch or PyTorch profiler events per op: calls, total (inclusive) and
self milliseconds, self share. Benchmark tooling, never a test.

Both sides' traces work: Crucible's benches write one with `profile=FILE` (LibTorch's legacy
profiler), the reference scripts with `--profile FILE` (torch.profiler). Self time is an event's
duration less the events nested directly inside it on the same thread, so `aten::linear` and the
`aten::addmm` under it are not counted twice.

    python3 profile_table.py trace.json [--top 30] [--shapes] [--json out.json]
"""
import argparse
import json
import sys
from collections import defaultdict


def load_events(path, shapes):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    spans = []
    for e in events:
        if e.get("ph") != "X" or "dur" not in e:
            continue
        # PyTorch traces also hold python functions and profiler bookkeeping; keep the ops.
        if e.get("cat") not in (None, "cpu_op", "user_annotation", "Operator"):
            continue
        name = e["name"]
        if shapes:
            dims = (e.get("args") or {}).get("Input Dims")
            if dims:
                name = f"{name} {dims}".replace(" ", "")
        spans.append((e.get("pid"), e.get("tid"), float(e["ts"]), float(e["dur"]), name))
    return spans


def self_times(spans):
    """Per op name: calls, inclusive us, self us. Nesting per (pid, tid) by interval."""
    by_thread = defaultdict(list)
    for pid, tid, ts, dur, name in spans:
        by_thread[(pid, tid)].append((ts, -dur, name))
    table = defaultdict(lambda: [0, 0.0, 0.0])
    for events in by_thread.values():
        events.sort()
        stack = []  # [end, name, child_us]
        def close(entry):
            end, name, child, dur = entry
            row = table[name]
            row[2] += dur - child
        for ts, neg_dur, name in events:
            dur = -neg_dur
            while stack and stack[-1][0] <= ts:
                close(stack.pop())
            if stack:
                stack[-1][2] += dur
            row = table[name]
            row[0] += 1
            row[1] += dur
            stack.append([ts + dur, name, 0.0, dur])
        while stack:
            close(stack.pop())
    return table


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--shapes", action="store_true", help="one row per op and input shapes")
    ap.add_argument("--json", help="also write the whole table here")
    a = ap.parse_args()
    table = self_times(load_events(a.trace, a.shapes))
    total_self = sum(r[2] for r in table.values()) or 1.0
    rows = sorted(table.items(), key=lambda kv: -kv[1][2])
    width = 90 if a.shapes else 48
    print(f"{'op':<{width}} {'calls':>6} {'total ms':>10} {'self ms':>10} {'self %':>7}")
    for name, (calls, incl, slf) in rows[: a.top]:
        print(f"{name[:width]:<{width}} {calls:>6} {incl / 1e3:>10.1f} {slf / 1e3:>10.1f} "
              f"{100 * slf / total_self:>6.1f}%")
    print(f"{'all ops (self)':<{width}} {'':>6} {'':>10} {total_self / 1e3:>10.1f}")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({n: {"calls": c, "total_ms": i / 1e3, "self_ms": s / 1e3}
                       for n, (c, i, s) in table.items()}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
