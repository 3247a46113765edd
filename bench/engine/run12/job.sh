#!/usr/bin/env bash
# Run 12 (session 7): the merged engine of this session (GDN decode with PDL, the T = 1
# stream GEMV's direct one-column mode for small K, the lanes attention reading q/k/v in
# place, logits read through page-locked memory) in one job, most important first:
#   1. compare against the cpu on every tiny fixture (one sequence, 64 tokens; 8 lanes at
#      different positions) and 8 lanes of synthetic SmolLM2;
#   2. the tuning job (bench/tune/job.sh: two runs, compare, per-bucket table): the
#      template set changed, so the installed profile no longer applies;
#   3. synthetic SmolLM2 q4_g64 decode at 1 and 8 lanes (256 steps), profile against
#      heuristics alternately (--profile-ab), then the page-locked logits read against the
#      pageable one (NINFER_PAGEABLE_LOGITS=1), then one row at a 4,000-token context;
#   4. synthetic 27B q4_g64: prompt 4096 with and without --prefill-cublas, decode at 1 and
#      8 lanes with --profile-ab, over one load.
# Needs (carried): .gpu/final/{ninfer.xz,REV,kc.tgz} (kc.tgz: `ninfer kernels build --all
# --arch sm_90` made here with the same binary, so NVRTC does not run there).
# Everything lands in $OUT/run12.tgz; a summary is printed last.
set -u
start=$(date +%s)
t() { echo "[$(( $(date +%s) - start )) s] $*"; }
F=.gpu/final
mkdir -p .gpu
xz -dc $F/ninfer.xz > .gpu/ninfer && chmod +x .gpu/ninfer
cp $F/REV .gpu/REV
export NINFER_CACHE_DIR=/tmp/ninfer-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf $F/kc.tgz -C $NINFER_CACHE_DIR
FINAL=$OUT; export OUT=$FINAL/run12; mkdir -p $OUT
source scripts/gpu/context.sh
export NINFER_REV="$rev"
N=.gpu/ninfer
# If the call's limit comes first, what was written still comes back as one file.
( sleep ${PARTIAL_AFTER:-500}; tar czf $FINAL/partial.tgz -C $FINAL run12 ) &
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
echo "\$ ninfer compare --synthetic smollm2-135m --tokens 64" >> $OUT/compare.txt
timeout 60 $N compare --synthetic smollm2-135m --tokens 64 --json $OUT/compare.jsonl >> $OUT/compare.txt 2>&1 || echo "FAILED smollm2" >> $OUT/compare.txt
echo "\$ ninfer compare --synthetic smollm2-135m --lanes 8 --tokens 12" >> $OUT/compare.txt
timeout 60 $N compare --synthetic smollm2-135m --lanes 8 --tokens 12 --json $OUT/compare.jsonl >> $OUT/compare.txt 2>&1 || echo "FAILED smollm2 lanes 8" >> $OUT/compare.txt
t compare

# 2. tuning (writes $OUT/tune/run1.toml)
mkdir -p $OUT/tune
OUT=$OUT/tune timeout 200 bash bench/tune/job.sh $F > $OUT/tune_job.txt 2>&1
t "tune rc $?"
prof="--no-profile"; [ -f $OUT/tune/run1.toml ] && prof="--profile $OUT/tune/run1.toml --profile-ab"

# 3. synthetic SmolLM2
B="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 4096 --lanes 1,8 --decode-tokens 256"
echo "\$ ninfer $B $prof" > $OUT/bench_smollm2.txt
timeout 90 $N $B $prof --json $OUT/bench_smollm2.jsonl >> $OUT/bench_smollm2.txt 2>&1
t "smollm2 rc $?"
P="--no-profile"; [ -f $OUT/tune/run1.toml ] && P="--profile $OUT/tune/run1.toml"
B="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 1,8 --decode-tokens 256 $P"
for round in 1 2; do
  echo "\$ NINFER_PAGEABLE_LOGITS=1 ninfer $B" >> $OUT/bench_logits.txt
  NINFER_PAGEABLE_LOGITS=1 timeout 40 $N $B --json $OUT/bench_logits.jsonl >> $OUT/bench_logits.txt 2>&1
  echo "\$ ninfer $B" >> $OUT/bench_logits.txt
  timeout 40 $N $B --json $OUT/bench_logits.jsonl >> $OUT/bench_logits.txt 2>&1
done
B="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 1 --decode-tokens 128 --decode-context 4000 $P"
echo "\$ ninfer $B" > $OUT/bench_longctx.txt
timeout 40 $N $B --json $OUT/bench_longctx.jsonl >> $OUT/bench_longctx.txt 2>&1
t "smollm2 a/b done"

# 4. synthetic 27B
echo "\$ ninfer bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 4096 --prefill-cublas-ab --lanes 1,8 $prof" > $OUT/bench_27b.txt
timeout 240 $N bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 4096 --prefill-cublas-ab --lanes 1,8 $prof --json $OUT/bench_27b.jsonl >> $OUT/bench_27b.txt 2>&1
t "27b rc $?"

tar czf $FINAL/run12.tgz -C $FINAL run12
echo "===== summary"
grep -vE '^\$' $OUT/compare.txt | grep -iE "fail|identical|differ|worst" | cut -c1-160 | head -30
cat $OUT/tune/phases.txt 2>/dev/null | tail -8
tail -12 $OUT/tune/table.txt 2>/dev/null
grep -E "^(prompt|decode)  |floor" $OUT/bench_smollm2.txt
grep -E "^\\$|^decode  " $OUT/bench_logits.txt | cut -c1-150
grep -E "^decode  " $OUT/bench_longctx.txt
grep -E "^(prompt|decode)  |floor" $OUT/bench_27b.txt
t done
