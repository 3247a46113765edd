#!/usr/bin/env python3
"""Per-kernel table of one decode step from an `ncu --csv --page raw` export.

A run's kernels split into forwards at each `embedding_*` kernel (every forward starts with
the embedding). `summarize.py CSV FIRST_ROW ROWS` sums gpu__time_duration by kernel name and
grid over the rows FIRST_ROW..FIRST_ROW+ROWS (a step found with `--segments`), printing
name, grid, launches, total us, us per launch as CSV. `summarize.py CSV --segments` lists
the forwards: first row, kernels, summed us. A CSV may be gzip-compressed (`.csv.gz`).
"""
import csv
import gzip
import sys


def num(v):
    """A metric value; ncu's CSV writes thousands separators ("9,536")."""
    return float(v.replace(",", ""))


def rows(path):
    opener = gzip.open if path.endswith(".gz") else open
    r = list(csv.reader(opener(path, "rt")))
    head = r[0]
    return [dict(zip(head, x)) for x in r[2:]]


def main():
    ks = rows(sys.argv[1])
    t = "gpu__time_duration.sum"
    if sys.argv[2] == "--segments":
        starts = [i for i, k in enumerate(ks) if k["Kernel Name"].startswith("embedding")]
        for a, b in zip(starts, starts[1:] + [len(ks)]):
            print(f"{a},{b - a},{sum(num(k[t]) for k in ks[a:b]):.1f}")
        return
    a, n = int(sys.argv[2]), int(sys.argv[3])
    agg = {}
    for k in ks[a:a + n]:
        key = (k["Kernel Name"], k["Grid Size"].replace(" ", ""))
        c = agg.setdefault(key, [0, 0.0])
        c[0] += 1
        c[1] += num(k[t])
    w = csv.writer(sys.stdout)
    w.writerow(["kernel", "grid", "launches", "total_us", "us_per_launch"])
    for (name, grid), (c, s) in sorted(agg.items(), key=lambda x: -x[1][1]):
        w.writerow([name, grid, c, f"{s:.1f}", f"{s / c:.2f}"])
    w.writerow(["all", "", sum(c for c, _ in agg.values()), f"{sum(s for _, s in agg.values()):.1f}", ""])


if __name__ == "__main__":
    main()
