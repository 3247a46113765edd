#!/usr/bin/env python3
"""Per-window sums of `bench kernels --filter prefill_cublas` records (kernels.jsonl): for
each T, the 27B's linears (count x per-shape median) by part: the whole route, the dequant,
the activations' conversion (measured, or the route's remainder where not) and the GEMMs."""
import json, re, sys
from collections import defaultdict

recs = [json.loads(l) for l in open(sys.argv[1])]
parts = defaultdict(float)
flops = defaultdict(float)
for r in recs:
    m = re.match(r"T=(\d+) N=(\d+) K=(\d+) \(x(\d+) in the 27B\)", r["shape"])
    if not m:
        continue
    t, n, k, c = map(int, m.groups())
    route = r["route"]
    kind = ("route" if route.endswith("_plain") else "dequant" if "dequant" in route
            else "act" if route.endswith("act_bf16") else "gemm")
    parts[(t, kind)] += c * r["median_us"]
    if kind == "route":
        flops[t] += c * 2 * t * n * k
for t in sorted({t for t, _ in parts}):
    route, dq, g = parts[(t, "route")], parts[(t, "dequant")], parts[(t, "gemm")]
    act = parts.get((t, "act"))
    rest = route - dq - g
    print(f"T={t}: route {route/1e3:.1f} ms ({flops[t]/route/1e6:.0f} TFLOP/s) = dequant {dq/1e3:.1f}"
          f" + GEMM {g/1e3:.1f} ({flops[t]/g/1e6:.0f} TFLOP/s) + the rest {rest/1e3:.1f}"
          + (f" (activations to bf16 alone {act/1e3:.1f})" if act else " (activations to bf16, not timed alone)")
          + " ms per window")
