#!/usr/bin/env bash
# v41 job: the decode attention's combine with its loads in batches. Stage with
# bench/kernels/v41/stage.sh and bench/engine/step/run4/stage.sh (main, for the A/B);
# carry [".gpu"]. Steps, cut to LIMIT:
#   qualify  every attn_decode instantiation against the oracle
#   compare  GPU against cpu, synthetic SmolLM2 q4_g64, a 300-token prompt and 64 greedy
#            tokens (5-12 live splits a step), main and v41: the same figures if the bits are
#   tune     scripts/gpu/tune.sh for the v41 template set (the profile to install)
#   smollm2  synthetic SmolLM2 q4_g64, 1 lane, 256 and 64 decode steps from a 16-token
#            prompt: main with the installed profile against v41 with its own, alternating,
#            two rounds
#   ncu      v41's step at ~265 keys, each kernel alone (as bench/engine/step run 5)
# Output: $OUT/v41.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-585}
source scripts/gpu/job-lib.sh
job_init step4 "(main)"
BMAIN=$B; CMAIN=$NINFER_CACHE_DIR; RMAIN=$NINFER_REV
job_init v41 "(working tree: batched combine)"
BNEW=$B; CNEW=$NINFER_CACHE_DIR; RNEW=$NINFER_REV
mkdir -p $O/tune
( sleep $((LIMIT - 8)); tar czf $OUT/partial.tgz -C /tmp v41-out ) > /dev/null 2>&1 &
PARTIAL=$!
use() { if [ $1 = main ]; then B=$BMAIN; export NINFER_CACHE_DIR=$CMAIN NINFER_REV=$RMAIN; else B=$BNEW; export NINFER_CACHE_DIR=$CNEW NINFER_REV=$RNEW; fi; }
use new
timeout $(left 90) $B qualify --filter attn_decode --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
CMP="compare --synthetic smollm2-135m --weights q4_g64 --synthetic-prompt 300 --tokens 64"
for v in main new; do
  use $v
  timeout $(left 60) $B $CMP > $O/compare_$v.txt 2>&1; echo "rc=$?" >> $O/compare_$v.txt
done
t compare
use new
OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 150) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
echo "rc=$?" >> $O/tune.txt
t tune
BM="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 1"
for i in 1 2; do
  for v in main new; do
    use $v; f=tuning/nvidia-h200.toml; [ $v = new ] && f=$O/tune/run1.toml
    for n in 256 64; do
      echo "\$ ninfer $BM --decode-tokens $n --profile ($v) round $i" >> $O/bench_smollm2.txt
      timeout $(left 40) $B $BM --decode-tokens $n --profile $f --json $O/bench_${v}_${n}_$i.jsonl >> $O/bench_smollm2.txt 2>&1
      echo "rc=$?" >> $O/bench_smollm2.txt
    done
  done
done
t smollm2
use new
P="ncu --clock-control none --cache-control none --graph-profiling node --metrics gpu__time_duration.sum"
timeout $(left 60) $P --export $O/ncu_new -f $B $BM --decode-context 240 --decode-tokens 20 --warmup-steps 2 --profile $O/tune/run1.toml > $O/ncu_new.log 2>&1
[ -f $O/ncu_new.ncu-rep ] && timeout $(left 30) ncu --import $O/ncu_new.ncu-rep --csv --page raw --metrics gpu__time_duration.sum > $O/ncu_new.csv 2> $O/ncu_new.err
rm -f $O/ncu_new.ncu-rep
t ncu
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $OUT/v41.tgz -C /tmp v41-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -6
for v in main new; do echo "compare $v:"; tail -4 $O/compare_$v.txt | cut -c1-160; done
grep noise $O/tune/compare.txt | tail -1
grep -E '^key = "attn|^entry = "attn' $O/tune/run1.toml | paste - - | cut -c1-120
tail -2 $O/tune.txt
grep -E '^\$|^decode  |rc=' $O/bench_smollm2.txt | cut -c1-110
t done
