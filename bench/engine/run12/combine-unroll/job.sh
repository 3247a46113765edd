#!/bin/bash
# The decode attention's combine unrolled (8 splits' loads in flight): qualify, compare,
# re-tune (template set changed), then SmolLM2 A/B against c6a0c11 (old binary, its own
# kernel cache and the installed profile) at contexts 16 and 3500.
set -u
start=$(date +%s); t() { echo "[$(( $(date +%s) - start )) s] $*"; }
F=.gpu/attn2
mkdir -p .gpu && xz -dc $F/ninfer.xz > .gpu/ninfer && xz -dc $F/old.xz > /tmp/old && chmod +x .gpu/ninfer /tmp/old
cp $F/REV .gpu/REV
export NINFER_REV=$(head -1 $F/REV)
mkdir -p /tmp/kc-new /tmp/kc-old && tar xzf $F/kc.tgz -C /tmp/kc-new && tar xzf $F/kc-old.tgz -C /tmp/kc-old
export NINFER_CACHE_DIR=/tmp/kc-new
R=$OUT/r; mkdir -p $R
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $R/context.txt
( sleep 280; tar czf $OUT/partial.tgz -C $OUT r ) &
N=.gpu/ninfer
timeout 60 $N qualify --filter attn_decode > $R/qualify.txt 2>&1; t "qualify rc $?"
for m in llama qwen35_r2 qwen3_next; do
  for l in 1 8; do
    timeout 30 $N compare --model tests/fixtures/tiny/$m --tokens 16 --lanes $l >> $R/compare.txt 2>&1 || echo "FAILED $m lanes $l" >> $R/compare.txt
  done
done
for l in 1 8; do timeout 40 $N compare --synthetic smollm2-135m --tokens 24 --lanes $l >> $R/compare.txt 2>&1 || echo "FAILED smollm2 lanes $l" >> $R/compare.txt; done
t compare
mkdir -p $R/tune
OUT=$R/tune timeout 150 bash bench/tune/job.sh > $R/tune_job.txt 2>&1; t "tune rc $?"
rm -f $R/tune/tune-out.tgz
P="--no-profile"; [ -f $R/tune/run1.toml ] && P="--profile $R/tune/run1.toml"
for ctx in 16 3500; do
  B="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 1,8 --decode-tokens 256 --decode-context $ctx"
  for round in 1 2; do
    echo "\$ [old c6a0c11] ninfer $B --profile tuning/nvidia-h200.toml" >> $R/ab.txt
    NINFER_CACHE_DIR=/tmp/kc-old timeout 40 /tmp/old $B --profile tuning/nvidia-h200.toml --json $R/ab_old.jsonl >> $R/ab.txt 2>&1
    echo "\$ [new] ninfer $B $P" >> $R/ab.txt
    timeout 40 $N $B $P --json $R/ab_new.jsonl >> $R/ab.txt 2>&1
  done
done
t "ab done"
tar czf $OUT/attn2.tgz -C $OUT r
echo "===== summary"
tail -n 2 $R/qualify.txt | cut -c1-120
grep -cE "identical" $R/compare.txt; grep -E "FAILED|differ" $R/compare.txt | head
grep -E "^attn_split|slower" $R/tune/table.txt | head -12
grep -E "^\\$|^decode  " $R/ab.txt | cut -c1-110
