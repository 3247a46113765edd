#!/usr/bin/env python3
"""bench/gdn run 16: the prefill qualify's worst relative L2 per route (the first file, a
qualify JSON), then the prefill bench files (one column each): each route whole and each
stage alone at 512 and 4096 tokens, us, and the whole routes' speed against fla's graph."""
import json, sys

worst = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    name = r["route"].split(" (")[0]
    key = " ".join(w for w in name.split() if w not in ("o", "y", "state", "conv"))
    # The worst check and its own allowance (an f16 state's outputs allow more than o).
    w = worst.setdefault(key, [0.0, 0, 0, r["allowance"]])
    if (r["rel_l2"] or 0.0) >= w[0]:
        w[0], w[3] = r["rel_l2"] or 0.0, r["allowance"]
    w[1] += 1
    w[2] += 0 if r["pass"] else 1
print(f"{'qualify route':40} {'checks':>6} {'fail':>4} {'worst':>9} {'allow':>7}")
for k, (x, n, f, a) in sorted(worst.items()):
    print(f"{k:40} {n:6} {f:4} {x:9.2e} {a:7.0e}")
print()
runs = []
for path in sys.argv[2:]:
    rows = {}
    for line in open(path):
        r = json.loads(line)
        if not r["what"].startswith("gdn prefill"):
            continue
        shape = r["shape"]
        route = r["route"].replace("gdn_prep_warp_w4_t4_k4+", "prep+").replace("gdn_chunk_", "")
        rows[(shape.split()[0], shape.split("state=")[-1], route)] = r
    runs.append(rows)
keys = sorted({k for rows in runs for k in rows}, key=lambda k: (int(k[0][2:]), k[1], k[2]))
print(f"{'T':6} {'state':5} {'route':56} " + " ".join(f"{'us':>8} {'vs fla':>6}" for _ in runs))
for k in keys:
    cells = []
    for rows in runs:
        r = rows.get(k)
        if r is None:
            cells.append(f"{'-':>8} {'-':>6}")
        else:
            s = r.get("speedup_vs_peer")
            cells.append(f"{r['median_us']:8.1f} {s:6.2f}" if s else f"{r['median_us']:8.1f} {'':>6}")
    print(f"{k[0]:6} {k[1]:5} {k[2][:56]:56} " + " ".join(cells))
