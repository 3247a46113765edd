#!/usr/bin/env python3
"""A short table of gdn_gpu's --json records for a bench job's summary.

Usage: gdn_bench_table.py [--layer-peer PEER_LAYER.jsonl] FILE.jsonl...

One line a record, per file in turn: the decode step at 8 lanes on the split routes
(entries with `vx`, their halves included) and on the grouped g6 tile, at 1 lane on the
engine's per-tile r2w8 tile, and the prefill's f16 and wgmma routes; each with its time,
its fraction of the ceiling and the peer's time in the same record (0 where none).
With --layer-peer (tools/peer_fla_gdn_layer.py's output), the whole decode steps also get
fla's decode step doing the same work ("gdn decode layer", in a graph) and our speedup
over it. A missing or empty file prints a line saying so.
"""
import argparse
import json


def wanted(r):
    s, ro = r["shape"], r["route"]
    if r["what"].startswith("gdn decode"):
        return ("lanes=8" in s and ("vx" in ro or "g6_" in ro)) or ("lanes=1" in s and "r2w8v_" in ro)
    return r["what"] == "gdn prefill" and ("qkvh" in ro or "wg" in ro)


def read(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except OSError as e:
        print(f"{path}: {e.strerror}")
        return None


def layer_peers(path):
    """{lanes: fla's decode layer step in a graph, us} from peer_fla_gdn_layer.py's records."""
    rows = read(path) if path else None
    out = {}
    for r in rows or []:
        if r["what"] == "gdn decode layer" and "(graph)" in r["peer"]:
            out[r["shape"].split()[0]] = r["median_us"]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layer-peer")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    layer = layer_peers(args.layer_peer)
    for path in args.files:
        rows = read(path)
        if rows is None:
            continue
        if not rows:
            print(f"{path}: no records")
        for r in filter(wanted, rows):
            s = r["shape"]
            line = (f"{r['what'][:11]:11} {s[:14]:14} {s[-9:]:9} {r['route'][:44]:44} "
                    f"{r['median_us']:9.2f} {r.get('fraction') or 0:5.2f} "
                    f"peer {r.get('peer_median_us') or 0:8.2f}")
            # A whole step (not one of its halves) against fla's step doing the same work.
            lp = layer.get(s.split()[0]) if r["what"] == "gdn decode" and " " not in r["route"] else None
            if lp:
                line += f"  fla step {lp:6.2f} ({lp / r['median_us']:.2f}x)"
            print(line)


if __name__ == "__main__":
    main()
