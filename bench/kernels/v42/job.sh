#!/usr/bin/env bash
# v42 job: tune::exact::apply keeps a launch that runs a direct split on a direct split
# (no template change: the installed profile stays valid). Staging: .gpu/v42 (the working
# tree's binary, REV, main's kernels) and .gpu/step4 (main, bench/engine/step/run4/stage.sh);
# carry [".gpu"]. Steps:
#   compare  GPU against cpu, synthetic SmolLM2 (f32 weights: exact), 1 and 8 lanes
#   smollm2  synthetic SmolLM2 q4_g64, 1 lane, 16-token prompt, 256 and 64 decode steps,
#            the installed profile, main against v42, three rounds alternating
# Output: $OUT/v42.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
source scripts/gpu/job-lib.sh
job_init step4 "(main)"
BMAIN=$B; CMAIN=$NINFER_CACHE_DIR; RMAIN=$NINFER_REV
job_init v42 "(working tree: direct splits stay direct)"
BNEW=$B; CNEW=$NINFER_CACHE_DIR; RNEW=$NINFER_REV
use() { if [ $1 = main ]; then B=$BMAIN; export NINFER_CACHE_DIR=$CMAIN NINFER_REV=$RMAIN; else B=$BNEW; export NINFER_CACHE_DIR=$CNEW NINFER_REV=$RNEW; fi; }
use v42
for L in 1 8; do
  timeout $(left 60) $B compare --synthetic smollm2-135m --lanes $L > $O/compare_l$L.txt 2>&1; echo "rc=$?" >> $O/compare_l$L.txt
done
t compare
BM="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 1 --profile tuning/nvidia-h200.toml"
for i in 1 2 3; do
  for v in main v42; do
    use $v
    for n in 256 64; do
      echo "\$ [$v] ninfer $BM --decode-tokens $n  (round $i)" >> $O/bench.txt
      timeout $(left 30) $B $BM --decode-tokens $n --json $O/bench_${v}_${n}_$i.jsonl >> $O/bench.txt 2>&1
      echo "rc=$?" >> $O/bench.txt
    done
  done
done
t bench
tar czf $OUT/v42.tgz -C /tmp v42-out
echo "===== summary"
cat $O/context.txt
for L in 1 8; do tail -3 $O/compare_l$L.txt | cut -c1-200; done
grep -E 'rc=[1-9]|ignored' $O/bench.txt | head -3
for v in main v42; do for n in 256 64; do echo "$v $n: $(cat $O/bench_${v}_${n}_*.jsonl | grep -o '"step_us":[0-9.]*' | cut -d: -f2 | cut -c1-6 | tr '\n' ' ')"; done; done
t done
