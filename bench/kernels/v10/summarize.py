#!/usr/bin/env python3
"""x20 figures of the ring (and best stream) routes per template set: one row per shape and route.
Usage: summarize.py bench_<variant>.jsonl ..."""
import json, sys, os

rows = {}
for path in sys.argv[1:]:
    v = os.path.basename(path)[len("bench_"):-len(".jsonl")]
    for line in open(path):
        r = json.loads(line)
        if not r["what"].endswith("x20") or "route" not in r:
            continue
        fmt = r["what"].split()[1]
        kind = "ring" if "_ring_" in r["route"] else ("stream" if "_stream_" in r["route"] else "other")
        split = r["route"].split("_t1_")[-1] if kind == "ring" else kind
        key = (fmt, r["shape"], split)
        rows.setdefault(key, {})
        us = r["median_us"]
        if kind == "stream":  # keep the best stream split
            old = rows[key].get(v)
            if old is not None and old[0] <= us:
                continue
        rows[key][v] = (us, r["fraction"])
vs = []
for path in sys.argv[1:]:
    vs.append(os.path.basename(path)[len("bench_"):-len(".jsonl")])
print("format shape split | " + " | ".join(f"{v} us (%copy)" for v in vs))
for key in sorted(rows):
    cells = []
    for v in vs:
        c = rows[key].get(v)
        cells.append(f"{c[0]:.2f} ({100*c[1]:.0f}%)" if c else "-")
    print(f"{key[0]} {key[1]} {key[2]} | " + " | ".join(cells))
