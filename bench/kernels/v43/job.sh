#!/usr/bin/env bash
# v43 job: the decode attention loads its first tile's older cache rows before the PDL
# wait. Stage with bench/kernels/v43/stage.sh (.gpu/v43) beside .gpu/v42 (v42's binary and
# main's kernels); carry [".gpu"]. Steps, cut to LIMIT:
#   qualify  every attn_decode instantiation against the oracle
#   compare  GPU against cpu, synthetic SmolLM2 (f32 weights), 1 and 8 lanes
#   tune     scripts/gpu/tune.sh for the v43 template set (the profile to install)
#   smollm2  synthetic SmolLM2 q4_g64, 1 lane, 16-token prompt, 256 and 64 decode steps:
#            v42 with the installed profile against v43 with its own, three rounds
#   ncu      v43's step at ~265 keys, each kernel alone (as bench/engine/step run 5)
# Output: $OUT/v43.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-585}
source scripts/gpu/job-lib.sh
job_init v42 "(v42)"
BOLD=$B; COLD=$NINFER_CACHE_DIR; ROLD=$NINFER_REV
job_init v43 "(working tree: first tile before the wait)"
BNEW=$B; CNEW=$NINFER_CACHE_DIR; RNEW=$NINFER_REV
mkdir -p $O/tune
( sleep $((LIMIT - 8)); tar czf $OUT/partial.tgz -C /tmp v43-out ) > /dev/null 2>&1 &
PARTIAL=$!
use() { if [ $1 = v42 ]; then B=$BOLD; export NINFER_CACHE_DIR=$COLD NINFER_REV=$ROLD; else B=$BNEW; export NINFER_CACHE_DIR=$CNEW NINFER_REV=$RNEW; fi; }
use v43
timeout $(left 90) $B qualify --filter attn_decode --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
for L in 1 8; do
  timeout $(left 60) $B compare --synthetic smollm2-135m --lanes $L > $O/compare_l$L.txt 2>&1; echo "rc=$?" >> $O/compare_l$L.txt
done
t compare
OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 150) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
echo "rc=$?" >> $O/tune.txt
t tune
BM="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 1"
for i in 1 2 3; do
  for v in v42 v43; do
    use $v; f=tuning/nvidia-h200.toml; [ $v = v43 ] && f=$O/tune/run1.toml
    for n in 256 64; do
      echo "\$ [$v] ninfer $BM --decode-tokens $n --profile $f  (round $i)" >> $O/bench.txt
      timeout $(left 30) $B $BM --decode-tokens $n --profile $f --json $O/bench_${v}_${n}_$i.jsonl >> $O/bench.txt 2>&1
      echo "rc=$?" >> $O/bench.txt
    done
  done
done
t smollm2
use v43
P="ncu --clock-control none --cache-control none --graph-profiling node --metrics gpu__time_duration.sum"
timeout $(left 60) $P --export $O/ncu_new -f $B $BM --decode-context 240 --decode-tokens 20 --warmup-steps 2 --profile $O/tune/run1.toml > $O/ncu_new.log 2>&1
[ -f $O/ncu_new.ncu-rep ] && timeout $(left 30) ncu --import $O/ncu_new.ncu-rep --csv --page raw --metrics gpu__time_duration.sum > $O/ncu_new.csv 2> $O/ncu_new.err
rm -f $O/ncu_new.ncu-rep
t ncu
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $OUT/v43.tgz -C /tmp v43-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -6
for L in 1 8; do tail -2 $O/compare_l$L.txt | cut -c1-180; done
grep noise $O/tune/compare.txt | tail -1
diff <(grep -E '^key|^entry' tuning/nvidia-h200.toml | paste - -) <(grep -E '^key|^entry' $O/tune/run1.toml | paste - -) | cut -c1-150
tail -2 $O/tune.txt
grep -E 'rc=[1-9]|ignored' $O/bench.txt | head -3
for v in v42 v43; do for n in 256 64; do echo "$v $n: $(cat $O/bench_${v}_${n}_*.jsonl | grep -o '"step_us":[0-9.]*' | cut -d: -f2 | cut -c1-6 | tr '\n' ' ')"; done; done
t done
