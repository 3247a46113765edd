#!/usr/bin/env bash
# v34 job: the tensor-core GEMV with two accumulator chains a group (v34/chain2.patch, c2)
# against main, one start. Stage with bench/kernels/v34/stage.sh; run with carry
# [".gpu"]. Steps, cut to LIMIT:
#   qualify  c2's mma routes (linear_exact_mma: every tile, prologue and epilogue)
#   kernels  main, c2, main, c2: the mma kernel's q4 records (T = 1..32) and the 27B's
#            four T = 8 launches ('linear_exact_mma step')
#   27b      the 27B at 8 lanes, heuristics (--no-profile: the profile has no T = 8 key,
#            and c2's template set would void it), c2 then main
# Output: $OUT/v34.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-585}
source scripts/gpu/job-lib.sh
job_init v34 "(main), + v34/chain2.patch (c2)"
G=.gpu/v34
( sleep $((LIMIT - 8)); tar czf $OUT/partial.tgz -C /tmp v34-out ) > /dev/null 2>&1 &
PARTIAL=$!
run() { # run SET SECONDS CMD... (SET: main or c2)
  local s=$1 lim=$(left $2); shift 2
  if [ $s = main ]; then timeout $lim $B "$@"; else NINFER_TEMPLATES=$PWD/$G/$s/templates timeout $lim $B "$@"; fi
}
run c2 90 qualify --filter linear_exact_mma --json $O/qualify_c2.jsonl > $O/qualify_c2.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_c2.txt
t qualify
F="linear_exact_mma q4_g64 x20|linear_exact_mma step"
for i in 1 2; do for s in main c2; do
  run $s 60 bench kernels --filter "$F" --json $O/bench_kernels_${s}_$i.jsonl >> $O/bench_kernels_$s.txt 2>&1
  echo "rc=$?" >> $O/bench_kernels_$s.txt
done; done
t kernels
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --decode-tokens 64 --lanes 8 --no-profile"
for s in c2 main; do
  echo "\$ ninfer $BM ($s)" > $O/bench_27b_$s.txt
  run $s 150 $BM --json $O/bench_27b_$s.jsonl >> $O/bench_27b_$s.txt 2>&1
  echo "rc=$?" >> $O/bench_27b_$s.txt
  t "27b $s"
done
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $OUT/v34.tgz -C /tmp v34-out
echo "===== summary"
cat $O/context.txt
echo "c2: $(grep -E 'checks:|rc=' $O/qualify_c2.txt | tr '\n' ' ')"
python3 scripts/gpu/ab_table.py $O main c2
for s in c2 main; do echo "$s:"; grep -E '^decode  |rc=' $O/bench_27b_$s.txt | cut -c1-100; done
t done
