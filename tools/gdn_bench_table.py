#!/usr/bin/env python3
"""A short table of gdn_gpu's --json records for a bench job's summary.

Usage: gdn_bench_table.py FILE.jsonl...

One line a record, per file in turn: the decode step at 8 lanes on the split routes
(entries with `vx`, their halves included) and on the grouped g6 tile, at 1 lane on the
engine's per-tile r2w8 tile, and the prefill's f16 and wgmma routes; each with its time,
its fraction of the ceiling and the peer's time in the same record (0 where none).
A missing or empty file prints a line saying so.
"""
import json
import sys


def wanted(r):
    s, ro = r["shape"], r["route"]
    if r["what"].startswith("gdn decode"):
        return ("lanes=8" in s and ("vx" in ro or "g6_" in ro)) or ("lanes=1" in s and "r2w8v_" in ro)
    return r["what"] == "gdn prefill" and ("qkvh" in ro or "wg" in ro)


def main(paths):
    for path in paths:
        try:
            with open(path) as f:
                rows = [json.loads(line) for line in f if line.strip()]
        except OSError as e:
            print(f"{path}: {e.strerror}")
            continue
        if not rows:
            print(f"{path}: no records")
        for r in filter(wanted, rows):
            s = r["shape"]
            print(f"{r['what'][:11]:11} {s[:14]:14} {s[-9:]:9} {r['route'][:44]:44} "
                  f"{r['median_us']:9.2f} {r.get('fraction') or 0:5.2f} "
                  f"peer {r.get('peer_median_us') or 0:8.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
