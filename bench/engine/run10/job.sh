#!/usr/bin/env bash
# Run 10 (session 5): the merged engine of this session (ring GEMV, PDL in every decode-step
# kernel including the linears, RoPE folded into decode attention, --prefill-cublas, the
# gdn_step tuner family) in one job, most important first so a timeout cuts the least:
#   1. qualify the linear families changed last (ring and stream GEMV with PDL);
#   2. compare against the cpu on every tiny fixture and on SmolLM2 (exact mode, PDL on);
#      greedy text with PDL on and off;
#   3. SmolLM2 q4_g64 prompt and decode: default, --no-pdl, ring off (NINFER_EXACT_RING=0);
#   4. perplexity --quick, the whole file at baseline and with --prefill-cublas;
#   5. the tuning job (both families; SmolLM2 decode with the profile against heuristics);
#   6. synthetic 27B q4_g64 with the new profile: decode, prompt 4096 with/without
#      --prefill-cublas over one load.
# Needs (carried): .gpu/final/{ninfer.xz,ninfer-perplexity.xz,REV,part.ac,wiki.test.raw};
# parts aa and ab copied to /root/models by two earlier calls. Everything lands in
# $OUT/run10.tgz; a summary is printed last.
set -u
start=$(date +%s)
t() { echo "[$(( $(date +%s) - start )) s] $*"; }
F=.gpu/final
mkdir -p .gpu
for b in ninfer ninfer-perplexity; do xz -dc $F/$b.xz > .gpu/$b && chmod +x .gpu/$b; done
cp $F/REV .gpu/REV
export NINFER_CACHE_DIR=/tmp/ninfer-cache
mkdir -p $NINFER_CACHE_DIR/models
M=$NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf
cat /root/models/part.aa /root/models/part.ab $F/part.ac > $M
FINAL=$OUT; export OUT=$FINAL/run10; mkdir -p $OUT
sha256sum $M | tee $OUT/model_sha.txt
source scripts/gpu/context.sh
export NINFER_REV="$rev"
N=.gpu/ninfer; P=.gpu/ninfer-perplexity

# 1. qualify
timeout 120 $N qualify --filter linear_exact,linear_stream --json $OUT/qualify.jsonl > $OUT/qualify.txt 2>&1
t "qualify rc $?"

# 2. compare
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools. Over the following centuries the settlement grew into a market town, then a walled city with its own laws, its own coins and a cathedral whose towers could be seen from every road that led to it."
: > $OUT/compare.txt
for fx in tests/fixtures/tiny/*/; do
  echo "\$ ninfer compare --model $fx --prompt <long> --tokens 64" >> $OUT/compare.txt
  timeout 60 $N compare --model "$fx" --prompt "$long" --tokens 64 --json $OUT/compare.jsonl >> $OUT/compare.txt 2>&1 || echo "FAILED $fx" >> $OUT/compare.txt
done
echo "\$ ninfer compare --prompt <long> --tokens 300" >> $OUT/compare.txt
timeout 60 $N compare --prompt "$long" --tokens 300 --json $OUT/compare.jsonl >> $OUT/compare.txt 2>&1 || echo FAILED >> $OUT/compare.txt
t compare
: > $OUT/pdl_text.txt
for f in "" --no-pdl; do
  echo "\$ ninfer run --chat --device cuda --weights q4_g64 $f --max-tokens 300 --temperature 0 \"Write a long story about the sea.\"" >> $OUT/pdl_text.txt
  timeout 60 $N run --chat --device cuda --weights q4_g64 $f --max-tokens 300 --temperature 0 "Write a long story about the sea." > $OUT/gen$f.txt 2>>$OUT/pdl_text.txt
done
cmp -s $OUT/gen.txt $OUT/gen--no-pdl.txt && echo "greedy text PDL on == --no-pdl ($(wc -c < $OUT/gen.txt) bytes)" >> $OUT/pdl_text.txt || echo "greedy text DIFFERS PDL on vs --no-pdl" >> $OUT/pdl_text.txt
t "pdl text"

# 3. SmolLM2 speed
bm() { # $1: label, rest: arguments
  local label=$1; shift
  echo "\$ $label ninfer bench model --model SmolLM2 $*" >> $OUT/bench_smollm2.txt
  timeout 90 $N bench model --model $M --weights q4_g64 --prompt 512,4096 --lanes 1 --no-profile "$@" --json $OUT/bench_model.jsonl >> $OUT/bench_smollm2.txt 2>&1
}
: > $OUT/bench_smollm2.txt
bm default
bm "" --no-pdl
NINFER_EXACT_RING=0 bm "NINFER_EXACT_RING=0"
bm default-again
t "bench smollm2"

# 4. perplexity
echo "\$ ninfer-perplexity wiki.test.raw --quick --device cuda" > $OUT/quick.txt
timeout 60 $P $F/wiki.test.raw --quick --device cuda 2>/dev/null >> $OUT/quick.txt
: > $OUT/quality.txt
for flag in "" --prefill-cublas; do
  echo "\$ ninfer-perplexity wiki.test.raw --device cuda $flag" >> $OUT/quality.txt
  timeout 100 $P $F/wiki.test.raw --device cuda $flag --json $OUT/quality.jsonl 2>/dev/null | tail -1 >> $OUT/quality.txt
done
t perplexity

# 5. tuning (both families), SmolLM2 decode with the profile against the heuristics
SKIP_27B=1 OUT=$OUT/tune timeout 200 bash scripts/gpu/tune.sh > $OUT/tune_job.txt 2>&1
t "tune rc $?"
cp $OUT/tune/run1.toml $FINAL/run1.toml 2>/dev/null

# 6. synthetic 27B
prof="--no-profile"; [ -f $OUT/tune/run1.toml ] && prof="--profile $OUT/tune/run1.toml"
timeout 220 $N bench model --synthetic qwen3.6-27b --weights q4_g64 $prof --prompt 4096 --lanes 1 --prefill-cublas-ab --json $OUT/bench_27b.jsonl > $OUT/bench_27b.txt 2>&1
t "27b rc $?"

tar czf $FINAL/run10.tgz -C $FINAL run10
echo "===== summary"
grep -E "FAIL|checks:" $OUT/qualify.txt | head
grep -vE '^\$' $OUT/compare.txt | sed -e 's/^.*fixtures\/tiny\///' | grep -iE "pass|fail|greedy|token" | cut -c1-200 | head -30
grep -v "^\$" $OUT/pdl_text.txt | tail -2
grep -E "^\$|^(prompt|decode)  " $OUT/bench_smollm2.txt
tail -1 $OUT/quick.txt; cat $OUT/quality.txt
tail -25 $OUT/tune_job.txt
grep -E "^(prompt|decode)  |floor" $OUT/bench_27b.txt
t done
