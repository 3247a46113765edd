#!/usr/bin/env bash
# v35 job: the A16 route's pipelined tensor-core kernel (linear/a16_pipe.cu) on the GPU.
# Stage with bench/kernels/v35/stage.sh; run with carry [".gpu"]. Steps, cut to LIMIT:
#   qualify  every linear_pipe instantiation (T = 33, 64, 100, 256 on real shapes, and the
#            chosen q4_g64 / q8_g32 routes at T = 512 and 4096 on 17408x5120), and the old
#            tiled kernel's (linear_mma) beside it
#   kernels  'linear q4_g64|linear q8_g32|linear bf16' twice: at T = 4096 on 17408x5120
#            every tensor-core tile, old and new, with cuBLAS bf16 in the same run
#   tune     scripts/gpu/tune.sh: the new template set voids the installed profile
# Output: $OUT/v35.tgz (tune/run1.toml is the profile to install); summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-585}
source scripts/gpu/job-lib.sh
job_init v35 "(working tree: + linear/a16_pipe.cu)"
mkdir -p $O/tune
( sleep $((LIMIT - 8)); tar czf $OUT/partial.tgz -C /tmp v35-out ) > /dev/null 2>&1 &
PARTIAL=$!
timeout $(left 150) $B qualify --filter linear_pipe,linear_mma_q4_g64,linear_mma_q8_g32 --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
for i in 1 2; do
  timeout $(left 90) $B bench kernels --filter "linear q4_g64|linear q8_g32|linear bf16" --json $O/bench_kernels_$i.jsonl >> $O/bench_kernels.txt 2>&1
  echo "rc=$?" >> $O/bench_kernels.txt
done
t kernels
OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 150) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
echo "rc=$?" >> $O/tune.txt
t tune
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $OUT/v35.tgz -C /tmp v35-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -20
python3 - $O <<'PY'
import json, sys
for i in (1, 2):
    for l in open(f"{sys.argv[1]}/bench_kernels_{i}.jsonl"):
        r = json.loads(l)
        if r["shape"].startswith("T=4096"):
            print(i, f'{r["route"][:40]:40} {r["shape"]:22} {r["median_us"]:9.1f} us  cuBLAS {r["peer_median_us"]:7.1f}  x{r["speedup_vs_peer"]:.3f}')
PY
tail -4 $O/tune.txt
t done
