#!/usr/bin/env bash
# v37 job: a16_pipe.cu as v35 (two stages) with the 16-warp 256 x 128 tile (v36's best,
# there with three stages) as the default (v37, the working tree), against v35's kernel
# (the binary and kernels of 9db75c1), one start. Stage with bench/kernels/v37/stage.sh;
# carry [".gpu"].
#   qualify  v37: every linear_pipe instantiation, the old linear_mma q4/q8 beside it
#   kernels  v35, v37, v35, v37: 'linear q4_g64|linear q8_g32' (T = 4096 on 17408x5120:
#            every tensor-core tile with cuBLAS bf16 in the same run)
#   tune     scripts/gpu/tune.sh with v37, if its default tile beat v35's in both rounds
#            (the new template set voids the installed profile)
# Output: $OUT/v37.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-585}
source scripts/gpu/job-lib.sh
job_init v35 "(A: v35)"
B35=$B; C35=$NINFER_CACHE_DIR; O35=$O
job_init v37 "(B: working tree, two stages, 256 x 128)"
B37=$B; C37=$NINFER_CACHE_DIR
mkdir -p $O/tune
( sleep $((LIMIT - 8)); tar czf $OUT/partial.tgz -C /tmp v37-out ) > /dev/null 2>&1 &
PARTIAL=$!
NINFER_CACHE_DIR=$C37 timeout $(left 150) $B37 qualify --filter linear_pipe,linear_mma_q4_g64,linear_mma_q8_g32 --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
for i in 1 2; do
  NINFER_REV=$(cat .gpu/v35/REV) NINFER_CACHE_DIR=$C35 timeout $(left 90) $B35 bench kernels --filter "linear q4_g64|linear q8_g32" --json $O/bench_kernels_v35_$i.jsonl >> $O/bench_kernels_v35.txt 2>&1
  echo "rc=$?" >> $O/bench_kernels_v35.txt
  NINFER_CACHE_DIR=$C37 timeout $(left 90) $B37 bench kernels --filter "linear q4_g64|linear q8_g32" --json $O/bench_kernels_v37_$i.jsonl >> $O/bench_kernels_v37.txt 2>&1
  echo "rc=$?" >> $O/bench_kernels_v37.txt
done
t kernels
python3 - $O > $O/table.txt <<'PY'
import json, sys
d = sys.argv[1]
best = {}
for s in ("v35", "v37"):
    for i in (1, 2):
        try:
            rows = [json.loads(l) for l in open(f"{d}/bench_kernels_{s}_{i}.jsonl")]
        except OSError:
            continue
        for r in rows:
            if r["shape"].startswith("T=4096"):
                print(s, i, f'{r["route"][:40]:40} {r["shape"]:22} {r["median_us"]:9.1f} us  cuBLAS {r["peer_median_us"]:7.1f}  x{r["speedup_vs_peer"]:.3f}')
                if r["route"] == {"v35": "linear_pipe_q4_g64_plain_128x128_w2x4", "v37": "linear_pipe_q4_g64_plain_256x128_w4x4"}[s]:
                    best.setdefault(s, []).append(r["median_us"])
a, b = best.get("v35", []), best.get("v37", [])
print("v37 wins" if len(a) == 2 and len(b) == 2 and max(b) < min(a) else "v37 does not win", a, b)
PY
t table
if grep -q '^v37 wins' $O/table.txt; then
  NINFER_CACHE_DIR=$C37 OUT=$O/tune B=$B37 E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 150) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
  echo "rc=$?" >> $O/tune.txt
  t tune
fi
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $OUT/v37.tgz -C /tmp v37-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -20
cat $O/table.txt
tail -4 $O/tune.txt 2> /dev/null
t done
