#!/usr/bin/env bash
# Job 2: fixes re-qualified, compare on every fixture and SmolLM2 (f32 exact), speed line,
# GPU perplexity --quick on SmolLM2.
set -u
xz -dc .gpu/ninfer.xz > .gpu/ninfer && xz -dc .gpu/ninfer-perplexity.xz > .gpu/ninfer-perplexity && chmod +x .gpu/ninfer .gpu/ninfer-perplexity
export NINFER_CACHE_DIR=/tmp/ninfer-cache
mkdir -p $NINFER_CACHE_DIR/models
cat /root/models/part.aa /root/models/part.ab > $NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf
sha256sum $NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf | tee $OUT/model_sha.txt
source scripts/gpu/context.sh
B=.gpu/ninfer
$B qualify --filter linear_exact_i8,linear_exact_f32,elementwise_copy2d --json $OUT/qualify.jsonl > $OUT/qualify.txt 2>&1; echo "qualify exit $?"; tail -2 $OUT/qualify.txt
: > $OUT/compare.txt
for fx in tests/fixtures/tiny/*/ default; do
  m=(--model $fx); [ $fx = default ] && m=()
  echo "\$ ninfer compare ${m[*]} --weights f32" >> $OUT/compare.txt
  timeout 60 $B compare "${m[@]}" --weights f32 --json $OUT/compare.jsonl >> $OUT/compare.txt 2>&1
done
grep -v '^\$' $OUT/compare.txt | cut -c1-330
for i in 1 2; do echo "\$ ninfer run --device cuda --max-tokens 128 \"The capital of France is\"" > $OUT/run$i.txt; $B run --device cuda --max-tokens 128 "The capital of France is" >> $OUT/run$i.txt 2>&1; tail -1 $OUT/run$i.txt; done
echo "\$ ninfer-perplexity .gpu/wiki.test.raw --quick --device cuda" > $OUT/ppl.txt
timeout 240 .gpu/ninfer-perplexity .gpu/wiki.test.raw --quick --device cuda --json $OUT/ppl.jsonl >> $OUT/ppl.txt 2>&1; echo "ppl exit $?"
tail -3 $OUT/ppl.txt
