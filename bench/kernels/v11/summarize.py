#!/usr/bin/env python3
"""The v11 job's table: per template set, the kernels' x20 medians and the model step times.

Usage: summarize.py DIR, the job's output folder, holding one file per run:
bench_kernels_<i>_<set>.jsonl, bench_overlap_<i>_cap<n>.jsonl, bench_smollm2_<i>_<set>.jsonl,
bench_27b_<i>_<set>.jsonl (<i> is the run's place in the job). Kernel rows: the route the heuristics take (marked
"(route)" by `bench kernels`) and the fastest split, in us, per run; base runs first and
last, so the drift between its two columns is the noise to read the others against.
"""
import glob
import json
import os
import re
import sys
from collections import defaultdict


def records(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                yield json.loads(line)


def runs(d, kind):
    """(label, path) per run of a kind, in run order; label = '<i>:<set>'."""
    found = []
    for path in glob.glob(os.path.join(d, f"bench_{kind}_*_*.jsonl")):
        m = re.search(rf"bench_{kind}_(\d+)_(\w+)\.jsonl$", path)
        if m:
            found.append((int(m.group(1)), f"{m.group(1)}:{m.group(2)}", path))
    return [(label, path) for _, label, path in sorted(found)]


def kernels(d):
    cols = runs(d, "kernels")
    if not cols:
        return
    table = defaultdict(dict)  # (what, shape) -> label -> {route: median}
    for label, path in cols:
        for r in records(path):
            if r.get("route") and r.get("median_us") is not None:
                table[(r["what"], r["shape"])].setdefault(label, {})[r["route"]] = r["median_us"]
    print("kernels, x20 median us: default route / fastest split")
    print("| what | shape | " + " | ".join(label for label, _ in cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for (what, shape), per_run in sorted(table.items()):
        cells = []
        for label, _ in cols:
            run = per_run.get(label)
            if not run:
                cells.append("")
                continue
            default = [v for k, v in run.items() if k.endswith("(route)")]
            d_cell = f"{default[0]:.2f}" if default else "-"
            cells.append(f"{d_cell} / {min(run.values()):.2f}")
        print(f"| {what} | {shape} | " + " | ".join(cells) + " |")


def per_route(d, kind, contains):
    """Every route containing `contains`, one row each, per run of `kind`."""
    cols = runs(d, kind)
    if not cols:
        return
    table = defaultdict(dict)  # (shape, route) -> label -> median
    for label, path in cols:
        for r in records(path):
            route = r.get("route") or ""
            if contains in route and r.get("median_us") is not None:
                table[(r["shape"], route.replace(" (route)", "*"))][label] = r["median_us"]
    print(f"\n{kind}, x20 median us per split (* the heuristics' route):")
    print("| shape | route | " + " | ".join(label for label, _ in cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for (shape, route), per_run in sorted(table.items()):
        cells = [f"{per_run[label]:.2f}" if label in per_run else "" for label, _ in cols]
        print(f"| {shape} | {route} | " + " | ".join(cells) + " |")


def models(d):
    for model in ["smollm2", "27b"]:
        lines = []
        for label, path in runs(d, model):
            for r in records(path):
                if r.get("kind") == "decode" and r.get("step_us"):
                    floor = r.get("floor_us")
                    frac = f", {r['step_us'] / floor:.2f}x floor" if floor else ""
                    lines.append(f"  {label:8} lanes {r['lanes']}: {r['step_us']:9.1f}{frac}")
        if lines:
            print(f"\n{model} decode, us per step (--no-profile), in run order:")
            print("\n".join(lines))


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    if not glob.glob(os.path.join(d, "bench_*.jsonl")):
        print(f"no bench outputs in {d}")
        return
    kernels(d)
    per_route(d, "overlap", "_ring_")
    models(d)


if __name__ == "__main__":
    main()
