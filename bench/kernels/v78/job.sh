#!/usr/bin/env bash
# v78: does a launch's ramp and drain hide behind its neighbours' when two launches' blocks
# share an SM? qualify linear_tc built for two blocks an SM (QUALIFY="BLOCKS:TILES:SLOTS"),
# then `bench kernels` on linear_tc in the variants VARIANTS, each NAME:BLOCKS:TILES:SLOTS:
# PROBE (blocks an SM the kernel is bounded and sized for; tiles a stage, 8 = 34 KB or 4 =
# 17 KB; the ring's depth at most; probe bits as v77: 1 no weight copies, 2 no compute,
# wrong results by design). Variant A is v77's kernel as built (1:8:12:0, 6 stages at T =
# 1), with the ring kernel's and the bf16 mma tile's records in the same process.
# Run 1: A:1:8:12:0 B:1:8:2:0 C:2:8:2:0 D:2:8:2:2 E:2:8:2:1 (B failed: a cap below three
# stages was refused at one block then); run 2 the default below.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-400}
source scripts/gpu/job-lib.sh
job_init v78 "(gemv_tc, blocks an SM and ring depth)"
IFS=: read -r qb qt qs <<< "${QUALIFY:-2:4:5}"
NINFER_TC_BLOCKS=$qb NINFER_TC_TILES=$qt NINFER_TC_SLOTS=$qs timeout $(left 90) $B qualify --filter linear_tc --json $O/qualify_linear_tc.jsonl > $O/qualify_linear_tc.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_linear_tc.txt
t "qualify linear_tc ($qb blocks an SM, $qt tiles a stage, $qs stages)"
grep -E "FAIL|checks|failed|rc=" $O/qualify_linear_tc.txt | head -20
VARIANTS=${VARIANTS:-"A:1:8:12:0 B:1:8:2:0 Bd:1:8:2:2 C:2:8:2:0 F:1:4:12:0 G:2:4:5:0 Gd:2:4:5:2 Ge:2:4:5:1"}
for v in $VARIANTS; do
  IFS=: read -r name blocks tiles slots probe <<< "$v"
  f="linear_tc q4_g64 x20"
  [ $name = A ] && f="$f|linear_exact_mma q4_g64 x20 T=1 N=17408|linear_exact_mma q4_g64 x20 T=8 N=17408"
  NINFER_TC_BLOCKS=$blocks NINFER_TC_TILES=$tiles NINFER_TC_SLOTS=$slots NINFER_TC_PROBE=$probe timeout $(left $([ $name = A ] && echo 80 || echo 40)) \
    $B bench kernels --filter "$f" --json $O/$name.jsonl > $O/$name.txt 2>&1
  echo "rc=$?" >> $O/$name.txt
  t "variant $v"
done
grep -E "linear_exact_mma|copy" $O/A.txt | head
python3 - "$O" $VARIANTS <<'PY'
import json, sys
o, variants = sys.argv[1], [v.split(":")[0] for v in sys.argv[2:]]
rows = {}
for v in variants:
    try:
        for line in open(f"{o}/{v}.jsonl"):
            r = json.loads(line)
            if r["what"].startswith("linear_tc"):
                rows.setdefault(r["shape"], {})[v] = (r["median_us"], r["fraction"])
    except FileNotFoundError:
        pass
print(f"{'shape':24} " + " ".join(f"{v:>7}" for v in variants) + "   frac A")
for s, x in rows.items():
    cell = lambda v: f"{x[v][0]:7.2f}" if v in x else f"{'-':>7}"
    fa = f"{x['A'][1]:.2f}" if "A" in x else "-"
    print(f"{s:24} " + " ".join(cell(v) for v in variants) + f"   {fa:>6}")
PY
# One archive: the device returns at most a few files.
mkdir -p "$OUT" && tar czf "$OUT/v78-${RUN:-run}.tgz" -C $O .
