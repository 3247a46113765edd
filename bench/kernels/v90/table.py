#!/usr/bin/env python3
"""v90's table: the ring chain bench's records (bench kernels --filter "ring chain") of each
pass given (JSONL files), one row per shape and form, us per GEMV and the fraction of copy."""
import json, sys
rows, order = {}, []
for i, p in enumerate(sys.argv[1:]):
    for line in open(p):
        r = json.loads(line)
        if "ring chain" not in r["what"]:
            continue
        key = (r["shape"], r["route"].replace("linear_exact_ring_q4_g64_plain_t1_", ""))
        if key not in rows:
            rows[key] = {}
            order.append(key)
        rows[key][i] = (r["median_us"], r["fraction"])
n = len(sys.argv) - 1
print(f"{'shape':20} {'split and form':42} " + " ".join(f"{'pass ' + str(i + 1):>16}" for i in range(n)))
for key in order:
    cells = [f"{rows[key][i][0]:8.2f} ({rows[key][i][1]:4.0%})" if i in rows[key] else f"{'-':>16}" for i in range(n)]
    print(f"{key[0][:20]:20} {key[1][:42]:42} " + " ".join(f"{c:>16}" for c in cells))
