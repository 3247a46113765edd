#!/usr/bin/env bash
# v39 job: the decode attention's 32-key split (one shared-memory tile a split) as a tuner
# candidate. Stage with bench/kernels/v39/stage.sh; carry [".gpu"]. Steps, cut to LIMIT:
#   qualify  every attn_decode instantiation (the new _s32 ones among them)
#   tune     scripts/gpu/tune.sh: the attn_split family now times 32, 64, 128, 256 keys
#   smollm2  synthetic SmolLM2 q4_g64, 256 decode steps from a 16-token prompt (the length
#            at which issue 8's 2,000 tokens/s line was 2-4% short), the installed profile
#            (v38, no 32-key split) against the new one, alternating, two rounds
# Output: $OUT/v39.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-585}
source scripts/gpu/job-lib.sh
job_init v39 "(working tree: DECODE_SPLITS with 32)"
mkdir -p $O/tune
( sleep $((LIMIT - 8)); tar czf $OUT/partial.tgz -C /tmp v39-out ) > /dev/null 2>&1 &
PARTIAL=$!
timeout $(left 90) $B qualify --filter attn_decode --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 150) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
echo "rc=$?" >> $O/tune.txt
t tune
BM="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --decode-tokens 256 --lanes 1"
for i in 1 2; do
  for p in installed new; do
    f=tuning/nvidia-h200.toml; [ $p = new ] && f=$O/tune/run1.toml
    echo "\$ ninfer $BM --profile ($p) round $i" >> $O/bench_smollm2.txt
    timeout $(left 40) $B $BM --profile $f --json $O/bench_smollm2_${p}_$i.jsonl >> $O/bench_smollm2.txt 2>&1
    echo "rc=$?" >> $O/bench_smollm2.txt
  done
done
t smollm2
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $OUT/v39.tgz -C /tmp v39-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -10
grep -E 'attn_split' $O/tune/compare.txt | head -8
grep -E '^key = "attn|^entry = "attn' $O/tune/run1.toml | paste - - | cut -c1-120
tail -3 $O/tune.txt
grep -E '^\$|^decode  |rc=' $O/bench_smollm2.txt | cut -c1-110
t done
