#!/usr/bin/env bash
set -u
for b in ninfer ninfer-perplexity; do xz -dc .gpu/$b.xz > .gpu/$b && chmod +x .gpu/$b; done
export NINFER_CACHE_DIR=/tmp/ninfer-cache
mkdir -p $NINFER_CACHE_DIR/models
cat /root/models/part.aa /root/models/part.ab > $NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf
sha256sum $NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf > $OUT/model_sha.txt
B=.gpu/ninfer
source scripts/gpu/context.sh
timeout 200 $B qualify --filter attention,rope,sgemm --json $OUT/qualify.jsonl > $OUT/qualify.txt 2>&1; echo "qualify rc $?"
grep -E "FAIL" $OUT/qualify.txt | head; grep -E "checks:|^error" $OUT/qualify.txt
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools. Over the following centuries the settlement grew into a market town, then a walled city with its own laws, its own coins and a cathedral whose towers could be seen from every road that led to it."
: > $OUT/compare.txt
for fx in tests/fixtures/tiny/*/; do
  echo "\$ compare $fx" >> $OUT/compare.txt
  timeout 60 $B compare --model "$fx" --prompt "$long" --tokens 300 >> $OUT/compare.txt 2>&1 || echo "FAILED $fx" >> $OUT/compare.txt
done
echo "\$ compare SmolLM2 long prompt" >> $OUT/compare.txt
timeout 60 $B compare --prompt "$long" --tokens 300 >> $OUT/compare.txt 2>&1 || echo FAILED >> $OUT/compare.txt
: > $OUT/speed.txt
for mode in "--weights f32" "--weights q8_g32" "--weights q4_g64"; do
  echo "\$ ninfer run --device cuda $mode --max-tokens 512 --chat \"Write a long story about the sea.\"" >> $OUT/speed.txt
  timeout 60 $B run --device cuda $mode --max-tokens 512 --chat "Write a long story about the sea." 2>&1 >/dev/null | tail -1 >> $OUT/speed.txt
done
echo "\$ ninfer-perplexity wiki.test.raw --quick --device cuda" >> $OUT/speed.txt
timeout 60 .gpu/ninfer-perplexity .gpu/wiki.test.raw --quick --device cuda 2>/dev/null >> $OUT/speed.txt
grep -vE '^\$' $OUT/compare.txt | sed -e 's/^.*fixtures\/tiny\///' | cut -c1-220
cat $OUT/speed.txt
tps=$(grep -oE '[0-9.]+ tokens/s' $OUT/speed.txt | tail -1 | cut -d' ' -f1)
echo "quick tokens/s: $tps"
if [ "${tps%.*}" -ge 15000 ] 2>/dev/null; then EACH_TIMEOUT=75 bash scripts/gpu/quality.sh 2>&1 | grep -vE '^\$' | cut -c1-200; fi
