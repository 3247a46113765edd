#!/usr/bin/env bash
# v41 job 2: which change moved SmolLM2's step in job 1: the batched combine or the profile
# (its linear_exact n576/k576 pick, the o projection's split). Same staging as job.sh, plus
# .gpu/v41/prof_no576.toml (the installed profile without that key) and
# .gpu/v41/prof_v41.toml (job 1's tune/run1.toml). Synthetic SmolLM2 q4_g64, 1 lane, a
# 16-token prompt, 256 and 64 decode steps, two rounds of:
#   main  installed profile | installed without n576/k576 | --no-profile
#   v41   --no-profile | its own profile
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
source scripts/gpu/job-lib.sh
job_init step4 "(main)"
BMAIN=$B; CMAIN=$NINFER_CACHE_DIR; RMAIN=$NINFER_REV
job_init v41 "(working tree: batched combine); job 2"
BNEW=$B; CNEW=$NINFER_CACHE_DIR; RNEW=$NINFER_REV
use() { if [ $1 = main ]; then B=$BMAIN; export NINFER_CACHE_DIR=$CMAIN NINFER_REV=$RMAIN; else B=$BNEW; export NINFER_CACHE_DIR=$CNEW NINFER_REV=$RNEW; fi; }
BM="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 1"
for i in 1 2; do
  for c in main:installed main:no576 main:none v41:none v41:own; do
    v=${c%%:*}; p=${c#*:}; use $v
    case $p in installed) a="--profile tuning/nvidia-h200.toml";; no576) a="--profile .gpu/v41/prof_no576.toml";;
      none) a="--no-profile";; own) a="--profile .gpu/v41/prof_v41.toml";; esac
    for n in 256 64; do
      echo "\$ [$v] ninfer $BM --decode-tokens $n $a  (round $i)" >> $O/bench.txt
      timeout $(left 30) $B $BM --decode-tokens $n $a --json $O/bench_${v}_${p}_${n}_$i.jsonl >> $O/bench.txt 2>&1
      echo "rc=$?" >> $O/bench.txt
    done
  done
done
t bench
tar czf $OUT/v41job2.tgz -C /tmp v41-out
echo "===== summary"
cat $O/context.txt
grep -E '^\$|^decode  |rc=[1-9]|ignored' $O/bench.txt | sed 's/ninfer bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 1//' | cut -c1-100
t done
