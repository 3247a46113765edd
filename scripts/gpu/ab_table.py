#!/usr/bin/env python3
"""The kernel records of an A/B job side by side (the bench/kernels experiment jobs).

`ab_table.py DIR SET...` reads DIR/bench_kernels_<SET>_<round>.jsonl (`ninfer bench kernels
--json`, rounds 1, 2, ...) and prints one line per ring or mma GEMV route and T = 1 or
T = 8 shape with each set's medians (us) in round order.
`ab_table.py --pick DIR SET...` prints the set whose fused-launch records (`(route)` in the
prologue bench) and T = 8 mma records sum to the least, then every set's sum (a set with a
round missing or fewer records than the others counts as infinitely slow).
"""
import collections
import json
import sys


def records(d, s):
    out, i = [], 1
    while True:
        try:
            f = open(f"{d}/bench_kernels_{s}_{i}.jsonl")
        except OSError:
            return out
        out += [json.loads(line) for line in f]
        i += 1


def table(d, sets):
    rows = collections.defaultdict(dict)
    for s in sets:
        for r in records(d, s):
            if ("ring" in r["route"] or "mma" in r["route"]) and r["shape"].split()[0] in ("T=1", "T=8"):
                k = (r["route"].replace("linear_exact_", "")[:34], r["shape"])
                rows[k].setdefault(s, []).append(round(r["median_us"], 1))
    for k, v in sorted(rows.items()):
        print(f"{k[0]:35} {k[1]:20}", " ".join(f"{s}={v.get(s)}" for s in sets))


def pick(d, sets):
    sums = {}
    for s in sets:
        rs = [r for r in records(d, s)
              if ("prologue" in r["what"] and "(route)" in r["route"])
              or ("mma" in r["route"] and r["shape"].startswith("T=8 "))]
        sums[s] = (len(rs), sum(r["median_us"] for r in rs))
    most = max(n for n, _ in sums.values())
    score = {s: (t if n == most and n else float("inf")) for s, (n, t) in sums.items()}
    print(min(score, key=score.get), score)


if __name__ == "__main__":
    if sys.argv[1] == "--pick":
        pick(sys.argv[2], sys.argv[3:])
    else:
        table(sys.argv[1], sys.argv[2:])
