#!/usr/bin/env bash
# Run 11 (session 6): the merged engine of this session (batched lanes decode, the exact
# tensor-core GEMV for T >= 3, GDN prefill on tensor cores, linear candidates tuned inside
# captured graphs, the attn_split family) in one job, most important first:
#   1. compare against the cpu on every tiny fixture: one sequence (64 tokens) and 8 lanes
#      at different positions; 8 lanes of synthetic SmolLM2;
#   2. the tuning job (bench/tune/job.sh: both runs, compare, per-bucket table), and the
#      opt-in linear_a16 family on SmolLM2's shapes;
#   3. synthetic SmolLM2 q4_g64 decode at 1 and 8 lanes, profile against heuristics
#      alternately (--profile-ab);
#   4. synthetic 27B q4_g64: prompt 4096 with and without --prefill-cublas, decode at 1 and
#      8 lanes with --profile-ab, over one load;

# Needs (carried): .gpu/final/{ninfer.xz,REV,kc.tgz} (kc.tgz: `ninfer kernels build --all
# --arch sm_90` made here with the same binary, so NVRTC does not run there).
# Everything lands in $OUT/run11.tgz; a summary is printed last.
set -u
start=$(date +%s)
t() { echo "[$(( $(date +%s) - start )) s] $*"; }
F=.gpu/final
mkdir -p .gpu
xz -dc $F/ninfer.xz > .gpu/ninfer && chmod +x .gpu/ninfer
cp $F/REV .gpu/REV
export NINFER_CACHE_DIR=/tmp/ninfer-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf $F/kc.tgz -C $NINFER_CACHE_DIR
FINAL=$OUT; export OUT=$FINAL/run11; mkdir -p $OUT
source scripts/gpu/context.sh
export NINFER_REV="$rev"
N=.gpu/ninfer
# If the call's limit comes first, what was written still comes back as one file.
( sleep ${PARTIAL_AFTER:-520}; tar czf $FINAL/partial.tgz -C $FINAL run11 ) &
t "staged"

# 1. compare
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools. Over the following centuries the settlement grew into a market town, then a walled city with its own laws, its own coins and a cathedral whose towers could be seen from every road that led to it."
: > $OUT/compare.txt
for fx in tests/fixtures/tiny/*/; do
  for lanes in 1 8; do
    tok=64; [ $lanes = 8 ] && tok=16
    echo "\$ ninfer compare --model $fx --prompt <long> --tokens $tok --lanes $lanes" >> $OUT/compare.txt
    timeout 60 $N compare --model "$fx" --prompt "$long" --tokens $tok --lanes $lanes --json $OUT/compare.jsonl >> $OUT/compare.txt 2>&1 || echo "FAILED $fx lanes $lanes" >> $OUT/compare.txt
  done
done
echo "\$ ninfer compare --synthetic smollm2-135m --lanes 8 --tokens 12" >> $OUT/compare.txt
timeout 60 $N compare --synthetic smollm2-135m --lanes 8 --tokens 12 --json $OUT/compare.jsonl >> $OUT/compare.txt 2>&1 || echo "FAILED smollm2 lanes 8" >> $OUT/compare.txt
t compare

# 2. tuning (writes $OUT/tune/run1.toml)
mkdir -p $OUT/tune
OUT=$OUT/tune timeout 200 bash bench/tune/job.sh $F > $OUT/tune_job.txt 2>&1
t "tune rc $?"
prof="--no-profile"; [ -f $OUT/tune/run1.toml ] && prof="--profile $OUT/tune/run1.toml --profile-ab"
# the opt-in linear_a16 family's first GPU run: SmolLM2's shapes at two prefill buckets
echo "\$ ninfer tune --synthetic smollm2-135m --weights q4_g64 --family linear_a16 --prefill-tokens 64,4096" > $OUT/tune/a16s.txt
timeout 100 $N tune --synthetic smollm2-135m --weights q4_g64 --family linear_a16 --prefill-tokens 64,4096 \
  --out $OUT/tune/a16s.toml --json $OUT/tune/a16s.jsonl >> $OUT/tune/a16s.txt 2>&1
t "a16 rc $?"

# 3. synthetic SmolLM2
echo "\$ ninfer bench model --synthetic smollm2-135m --weights q4_g64 --prompt 4096 --lanes 1,8 $prof" > $OUT/bench_smollm2.txt
timeout 90 $N bench model --synthetic smollm2-135m --weights q4_g64 --prompt 4096 --lanes 1,8 $prof --json $OUT/bench_smollm2.jsonl >> $OUT/bench_smollm2.txt 2>&1
t "smollm2 rc $?"

# 4. synthetic 27B
echo "\$ ninfer bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 4096 --prefill-cublas-ab --lanes 1,8 $prof" > $OUT/bench_27b.txt
timeout 240 $N bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 4096 --prefill-cublas-ab --lanes 1,8 $prof --json $OUT/bench_27b.jsonl >> $OUT/bench_27b.txt 2>&1
t "27b rc $?"


tar czf $FINAL/run11.tgz -C $FINAL run11
echo "===== summary"
grep -vE '^\$' $OUT/compare.txt | grep -iE "pass|fail|identical|differ|worst" | cut -c1-160 | head -30
cat $OUT/tune/phases.txt 2>/dev/null | tail -8
grep -E "keys tuned|not timed|noise per key|error" $OUT/tune/a16s.txt | head -8
tail -15 $OUT/tune/table.txt 2>/dev/null
grep -E "^(prompt|decode)  |floor" $OUT/bench_smollm2.txt
grep -E "^(prompt|decode)  |floor" $OUT/bench_27b.txt
t done
