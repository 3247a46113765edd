#!/usr/bin/env bash
# Whole-file quality trades on SmolLM2: every flag with --method chunks, then the baseline
# with the default stride method, in the time left.
set -u
start=$(date +%s)
for b in ninfer-perplexity; do xz -dc .gpu/$b.xz > .gpu/$b && chmod +x .gpu/$b; done
export NINFER_CACHE_DIR=/tmp/ninfer-cache
mkdir -p $NINFER_CACHE_DIR/models
cat /root/models/part.aa /root/models/part.ab > $NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf
sha256sum $NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf > $OUT/model_sha.txt
source scripts/gpu/context.sh
export NINFER_REV="$rev"
P=.gpu/ninfer-perplexity
: > $OUT/quality.txt
for flag in "" --embedding-q4 --embedding-q6 --lm-head-q4 --lm-head-q6; do
  echo "\$ ninfer-perplexity wiki.test.raw --device cuda --method chunks $flag" >> $OUT/quality.txt
  timeout 100 $P .gpu/wiki.test.raw --device cuda --method chunks $flag --json $OUT/quality.jsonl 2>/dev/null >> $OUT/quality.txt
  echo "exit $? after $(( $(date +%s) - start )) s" >> $OUT/quality.txt
done
left=$(( 585 - ($(date +%s) - start) ))
echo "\$ ninfer-perplexity wiki.test.raw --device cuda   (stride 2048; ${left} s left)" >> $OUT/quality.txt
timeout $left $P .gpu/wiki.test.raw --device cuda --json $OUT/quality.jsonl 2>/dev/null >> $OUT/quality.txt
echo "exit $? after $(( $(date +%s) - start )) s" >> $OUT/quality.txt
cat $OUT/quality.txt
