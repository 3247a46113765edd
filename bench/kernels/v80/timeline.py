# v80: summarises the trace probe's JSON lines (one a block and launch, %globaltimer ns;
# written by `bench kernels` under NINFER_TC_PROBE with bit 8 and NINFER_TC_TRACE=FILE):
#   python3 bench/kernels/v80/timeline.py FILE [FILE ...]
# Per shape, over the chain's launches after the first (its start follows a synchronize):
# the period (start to next start), each launch's span (first entry to last exit), the gap
# from its last exit to the next launch's first entry (negative: overlap), and the
# medians over blocks of entry -> PDL wait passed, wait -> first stage full, the stream
# (first stage full -> last released), the drain (last released -> exit), the producer's
# last copy issued after entry; SMs a launch used, and the share of a launch's blocks that
# entered on an SM before the previous launch's block there had exited (co-residency).
import json, statistics, sys
from collections import defaultdict

for path in sys.argv[1:]:
    by = defaultdict(lambda: defaultdict(list))
    for line in open(path):
        r = json.loads(line)
        by[r["shape"]][r["launch"]].append(r)
    print(f"== {path}")
    print(f"{'shape':22} {'period':>7} {'span':>6} {'gap':>6} {'wait':>6} {'ramp':>6} {'stream':>7} {'drain':>6} {'issued':>7} {'SMs':>4} {'co-res':>6}")
    for shape, launches in by.items():
        ids = sorted(launches)
        rows = []
        for i in ids[1:]:
            bl, prev = launches[i], launches[i - 1]
            start = min(b["entry"] for b in bl)
            end = max(b["exit"] for b in bl)
            pend = max(b["exit"] for b in prev)
            nxt = launches.get(i + 1)
            period = (min(b["entry"] for b in nxt) - start) if nxt else float("nan")
            med = lambda f: statistics.median(f(b) for b in bl)
            prev_exit = {b["sm"]: b["exit"] for b in prev}
            co = sum(1 for b in bl if b["sm"] in prev_exit and b["entry"] < prev_exit[b["sm"]]) / len(bl)
            rows.append((period, end - start, start - pend,
                         med(lambda b: b["wait"] - b["entry"]), med(lambda b: b["first"] - b["wait"]),
                         med(lambda b: b["last"] - b["first"]), med(lambda b: b["exit"] - b["last"]),
                         med(lambda b: b["issued"] - b["entry"]), len({b["sm"] for b in bl}), co))
        mean = [statistics.fmean(x for x in col if x == x) if any(x == x for x in col) else float("nan") for col in zip(*rows)]
        us = lambda v: f"{v / 1000:.2f}"
        print(f"{shape:22} {us(mean[0]):>7} {us(mean[1]):>6} {us(mean[2]):>6} {us(mean[3]):>6} {us(mean[4]):>6} {us(mean[5]):>7} {us(mean[6]):>6} {us(mean[7]):>7} {mean[8]:4.0f} {mean[9]:6.2f}")
