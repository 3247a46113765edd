# x20 medians by shape (rows) and run (columns) from `bench kernels --json` files:
#   python3 bench/kernels/v81/table.py DIR NAME[:...] [NAME[:...] ...] [--passes ab]
# reads DIR/NAME.jsonl for each NAME (the part before the first ':', so a job's variant
# specs can be passed as they are); with --passes P, DIR/NAMEp.jsonl for each pass p in P,
# all of one pass before the next. Used by the v81-v83 jobs.
import json
import sys

args = sys.argv[2:]
passes = ""
if "--passes" in args:
    i = args.index("--passes")
    passes = args[i + 1]
    del args[i : i + 2]
names = [v.split(":")[0] for v in args]
cols = [n + p for p in passes for n in names] if passes else names
rows = {}
for v in cols:
    try:
        for line in open(f"{sys.argv[1]}/{v}.jsonl"):
            r = json.loads(line)
            rows.setdefault(r["shape"], {})[v] = r["median_us"]
    except FileNotFoundError:
        pass
print(f"{'shape':22} " + " ".join(f"{v:>6}" for v in cols))
for s, x in rows.items():
    print(f"{s:22} " + " ".join(f"{x[v]:6.2f}" if v in x else f"{'-':>6}" for v in cols))
