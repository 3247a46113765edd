#!/usr/bin/env python3
"""bench/gdn run 55: the synthetic 27B's 8-lane step by kernel, the conv launch against the
conv epilogue. `diff.py LAUNCH.csv EPILOGUE.csv` (ncu `--csv --page raw` exports, gzip or
not) takes the last whole forward of each (split at each `embedding*` kernel), sums
gpu__time_duration by kernel name and prints, per name, launches and us in each mode and
the difference (epilogue - launch), largest first, then the totals. ncu times each kernel
alone (no PDL overlap), so the totals bound the step from above; a difference that the
engine's step shows (+419 us, run 53) but these sums do not is overlap, not kernel time.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../engine/step"))
from summarize import num, rows  # noqa: E402


def last_forward(path):
    ks = rows(path)
    starts = [i for i, k in enumerate(ks) if k["Kernel Name"].startswith("embedding")]
    a, b = starts[-2], starts[-1]
    agg = {}
    for k in ks[a:b]:
        c = agg.setdefault(k["Kernel Name"], [0, 0.0])
        c[0] += 1
        c[1] += num(k["gpu__time_duration.sum"]) / 1e3
    return agg


def main():
    a, b = last_forward(sys.argv[1]), last_forward(sys.argv[2])
    names = sorted(set(a) | set(b), key=lambda n: -abs(b.get(n, [0, 0])[1] - a.get(n, [0, 0])[1]))
    print(f"{'kernel':<64} {'n':>4} {'launch us':>10} {'n':>4} {'epi us':>10} {'diff':>9}")
    for n in names:
        (na, ua), (nb, ub) = a.get(n, [0, 0.0]), b.get(n, [0, 0.0])
        print(f"{n[:64]:<64} {na:>4} {ua:>10.1f} {nb:>4} {ub:>10.1f} {ub - ua:>+9.1f}")
    ta, tb = sum(v[1] for v in a.values()), sum(v[1] for v in b.values())
    print(f"{'total (profiled kernels)':<64} {sum(v[0] for v in a.values()):>4} {ta:>10.1f} "
          f"{sum(v[0] for v in b.values()):>4} {tb:>10.1f} {tb - ta:>+9.1f}")


if __name__ == "__main__":
    main()
