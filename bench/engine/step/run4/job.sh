#!/bin/bash
# Run 4: where SmolLM2's 1-lane decode step goes as the cache grows (issue 8's 2,000 tok/s
# holds at 64 steps, not at 256). Stage with run4/stage.sh; carry [".gpu"]. Steps:
#   bench    synthetic smollm2-135m q4_g64, 1 lane, --decode-tokens 64 and 256 (prompt 16),
#            the installed profile
#   ncu      one replayed step, each kernel alone, at prompt 16 and prompt 240 (2 steps)
# Output: $OUT/run4.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
source scripts/gpu/job-lib.sh
job_init step4 "(main)"
PROF="--profile tuning/nvidia-h200.toml"
BM="bench model --synthetic smollm2-135m --weights q4_g64 --lanes 1 $PROF"
for n in 64 256; do
  echo "\$ ninfer $BM --prompt 16 --decode-tokens $n" > $O/bench_$n.txt
  timeout $(left 60) $B $BM --prompt 16 --decode-tokens $n --json $O/bench_$n.jsonl >> $O/bench_$n.txt 2>&1
  echo "rc=$?" >> $O/bench_$n.txt
done
t bench
P="ncu --clock-control none --cache-control none --graph-profiling node --metrics gpu__time_duration.sum"
for p in 16 240; do
  timeout $(left 60) $P --export $O/ncu_p$p -f $B $BM --prompt $p --warmup 0 --decode-tokens 2 --warmup-steps 2 > $O/ncu_p$p.log 2>&1
  echo "rc=$?" >> $O/ncu_p$p.log
  [ -f $O/ncu_p$p.ncu-rep ] && timeout $(left 30) ncu --import $O/ncu_p$p.ncu-rep --csv --page raw --metrics gpu__time_duration.sum > $O/ncu_p$p.csv 2> $O/ncu_p$p.err
  rm -f $O/ncu_p$p.ncu-rep
  t "ncu prompt $p"
done
tar czf $OUT/run4.tgz -C /tmp step4-out
echo "===== summary"
cat $O/context.txt
for n in 64 256; do grep -E '^decode|rc=' $O/bench_$n.txt | cut -c1-160; done
for p in 16 240; do tail -2 $O/ncu_p$p.log | cut -c1-160; wc -l < $O/ncu_p$p.csv; done
t done
