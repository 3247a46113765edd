#!/usr/bin/env bash
# Job A (session 4, run 9): device-side NLL qualify, the engine against the cpu (fixtures +
# SmolLM2), fused vs unfused, perplexity speed, the whole-file quality table, bench model.
set -u
start=$(date +%s)
for b in ninfer ninfer-perplexity; do xz -dc .gpu/$b.xz > .gpu/$b && chmod +x .gpu/$b; done
export NINFER_CACHE_DIR=/tmp/ninfer-cache
mkdir -p $NINFER_CACHE_DIR/models
M=$NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf
cp .gpu/part.ac /root/models/ && cat /root/models/part.aa /root/models/part.ab /root/models/part.ac > $M
sha256sum $M > $OUT/model_sha.txt
source scripts/gpu/context.sh
export NINFER_REV="$rev"
N=.gpu/ninfer; P=.gpu/ninfer-perplexity
t() { echo "[$(( $(date +%s) - start )) s] $*"; }
t qualify
timeout 120 $N qualify --filter loss --json $OUT/qualify.jsonl > $OUT/qualify.txt 2>&1; t "qualify rc $?"
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools. Over the following centuries the settlement grew into a market town, then a walled city with its own laws, its own coins and a cathedral whose towers could be seen from every road that led to it."
: > $OUT/compare.txt
for fx in tests/fixtures/tiny/*/; do
  echo "\$ ninfer compare --model $fx --prompt <long> --tokens 64" >> $OUT/compare.txt
  timeout 60 $N compare --model "$fx" --prompt "$long" --tokens 64 >> $OUT/compare.txt 2>&1 || echo "FAILED $fx" >> $OUT/compare.txt
done
echo "\$ ninfer compare --prompt <long> --tokens 300" >> $OUT/compare.txt
timeout 60 $N compare --prompt "$long" --tokens 300 >> $OUT/compare.txt 2>&1 || echo FAILED >> $OUT/compare.txt
t compare
: > $OUT/fusion.txt
for f in "" --unfused; do
  echo "\$ ninfer-perplexity wiki.test.raw --quick --device cuda --weights q8_g32 $f" >> $OUT/fusion.txt
  timeout 60 $P .gpu/wiki.test.raw --quick --device cuda --weights q8_g32 $f 2>/dev/null >> $OUT/fusion.txt
  echo "\$ ninfer run --device cuda --weights q4_g64 $f --max-tokens 300 --temperature 0 \"Write a long story about the sea.\"" >> $OUT/fusion.txt
  timeout 60 $N run --device cuda --weights q4_g64 $f --max-tokens 300 --temperature 0 "Write a long story about the sea." > $OUT/gen$f.txt 2>>$OUT/fusion.txt
done
cmp -s $OUT/gen.txt $OUT/gen--unfused.txt && echo "greedy text fused == unfused ($(wc -c < $OUT/gen.txt) bytes)" >> $OUT/fusion.txt || echo "greedy text DIFFERS fused vs unfused" >> $OUT/fusion.txt
t fusion
echo "\$ ninfer-perplexity wiki.test.raw --quick --device cuda" > $OUT/quick.txt
timeout 60 $P .gpu/wiki.test.raw --quick --device cuda 2>/dev/null >> $OUT/quick.txt
t quick
: > $OUT/quality.txt
for flag in "" --embedding-q4 --embedding-q6 --lm-head-q4 --lm-head-q6; do
  echo "\$ ninfer-perplexity wiki.test.raw --device cuda $flag" >> $OUT/quality.txt
  timeout 100 $P .gpu/wiki.test.raw --device cuda $flag --json $OUT/quality.jsonl 2>/dev/null | tail -1 >> $OUT/quality.txt
  echo "exit $? after $(( $(date +%s) - start )) s" >> $OUT/quality.txt
done
t quality
for w in q4_g64 q8_g32 f32; do
  timeout 60 $N bench model --model $M --weights $w --prompt 512,4096 --lanes 1 --json $OUT/bench_model.jsonl > $OUT/bench_smollm2_$w.txt 2>&1
done
timeout 60 $N bench model --model $M --weights q4_g64 --unfused --prompt 512 --lanes 1 --json $OUT/bench_model.jsonl > $OUT/bench_smollm2_q4_g64_unfused.txt 2>&1
t bench
grep -E "FAIL|checks:" $OUT/qualify.txt | head
grep -vE '^\$' $OUT/compare.txt | sed -e 's/^.*fixtures\/tiny\///' | cut -c1-250
cat $OUT/fusion.txt | grep -v "^\[window"
cat $OUT/quick.txt | tail -1
cat $OUT/quality.txt
grep -hE "^(prompt|decode) " $OUT/bench_smollm2_*.txt | grep -v lane
for f in $OUT/bench_smollm2_*.txt; do echo "$f"; grep -E "^(prompt|decode)  " $f; done
