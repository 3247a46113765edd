#!/usr/bin/env bash
# v38 job: the A16 kernel as it lands (v36's three-stage a16_pipe.cu, the 256 x 128 tile as
# the default), then the profile for its template set and the 27B with it. Stage with
# bench/kernels/v38/stage.sh; carry [".gpu"]. Steps, cut to LIMIT:
#   qualify  every linear_pipe instantiation, the old linear_mma q4/q8 beside it
#   kernels  'linear q4_g64|linear q8_g32' twice (T = 4096 on 17408x5120: every
#            tensor-core tile with cuBLAS bf16 in the same run)
#   tune     scripts/gpu/tune.sh (the template set is new: the profile to install)
#   27b      the synthetic 27B at 1 and 8 lanes, that profile against the heuristics over
#            one load (--profile-ab)
# Output: $OUT/v38.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-585}
source scripts/gpu/job-lib.sh
job_init v38 "(working tree: a16_pipe.cu as v36, 256 x 128 default)"
mkdir -p $O/tune
( sleep $((LIMIT - 8)); tar czf $OUT/partial.tgz -C /tmp v38-out ) > /dev/null 2>&1 &
PARTIAL=$!
timeout $(left 150) $B qualify --filter linear_pipe,linear_mma_q4_g64,linear_mma_q8_g32 --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
for i in 1 2; do
  timeout $(left 90) $B bench kernels --filter "linear q4_g64|linear q8_g32" --json $O/bench_kernels_$i.jsonl >> $O/bench_kernels.txt 2>&1
  echo "rc=$?" >> $O/bench_kernels.txt
done
t kernels
OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 150) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
echo "rc=$?" >> $O/tune.txt
t tune
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --decode-tokens 64 --lanes 1,8 --profile-ab"
echo "\$ ninfer $BM --profile tune/run1.toml" > $O/bench_27b_ab.txt
timeout $(left 240) $B $BM --profile $O/tune/run1.toml --json $O/bench_27b_ab.jsonl >> $O/bench_27b_ab.txt 2>&1
echo "rc=$?" >> $O/bench_27b_ab.txt
t 27b
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $OUT/v38.tgz -C /tmp v38-out
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
grep -E '^decode  |rc=' $O/bench_27b_ab.txt | cut -c1-110
t done
