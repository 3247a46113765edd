#!/usr/bin/env bash
# v41 job 3: the batched combine alone. Main's kernels and v41's under the same routes:
# job 1's profile (tune/run1.toml, v41's template set) for v41, and the same file with
# main's template-set hash (.gpu/v41/prof_v41_mainhash.toml) for main. Synthetic SmolLM2
# q4_g64, 1 lane, a 16-token prompt, 256 and 64 decode steps, five rounds alternating.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
source scripts/gpu/job-lib.sh
job_init step4 "(main)"
BMAIN=$B; CMAIN=$NINFER_CACHE_DIR; RMAIN=$NINFER_REV
job_init v41 "(working tree: batched combine); job 3"
BNEW=$B; CNEW=$NINFER_CACHE_DIR; RNEW=$NINFER_REV
use() { if [ $1 = main ]; then B=$BMAIN; export NINFER_CACHE_DIR=$CMAIN NINFER_REV=$RMAIN; else B=$BNEW; export NINFER_CACHE_DIR=$CNEW NINFER_REV=$RNEW; fi; }
BM="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 1"
for i in 1 2 3 4 5; do
  for v in main v41; do
    use $v; f=.gpu/v41/prof_v41.toml; [ $v = main ] && f=.gpu/v41/prof_v41_mainhash.toml
    for n in 256 64; do
      echo "\$ [$v] ninfer $BM --decode-tokens $n --profile $f  (round $i)" >> $O/bench.txt
      timeout $(left 30) $B $BM --decode-tokens $n --profile $f --json $O/bench_${v}_${n}_$i.jsonl >> $O/bench.txt 2>&1
      echo "rc=$?" >> $O/bench.txt
    done
  done
done
t bench
tar czf $OUT/v41job3.tgz -C /tmp v41-out
echo "===== summary"
cat $O/context.txt
grep -E 'rc=[1-9]|ignored' $O/bench.txt | head -3
for v in main v41; do for n in 256 64; do echo "$v $n: $(cat $O/bench_${v}_${n}_*.jsonl | grep -o '"step_us":[0-9.]*' | cut -d: -f2 | tr '\n' ' ')"; done; done
t done
