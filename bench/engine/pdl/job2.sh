#!/usr/bin/env bash
# PDL job 2 (branch pdl): the step arena (no allocation nodes between the captured step's
# kernels, so kernel-to-kernel edges form and PDL gets them). SmolLM2-135M (synthetic,
# q4_g64) decode with PDL on and off, twice each, with the captured step's programmatic
# edge count; then compare on every tiny fixture (exact mode, PDL on).
# Staged in .gpu/pdl/: ninfer.xz (the branch's release binary), cache90.tgz (its sm_90
# kernels), REV.
set -u
start=$(date +%s)
t() { echo "[$(( $(date +%s) - start )) s] $*"; }
D=.gpu/pdl
xz -dc $D/ninfer.xz > $D/ninfer && chmod +x $D/ninfer
N=$D/ninfer
export NINFER_CACHE_DIR=/tmp/ninfer-pdl-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf $D/cache90.tgz -C $NINFER_CACHE_DIR
export NINFER_REV=$(cat $D/REV)
{ echo "rev $NINFER_REV"; date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $OUT/context.txt
t start
: > $OUT/bench.txt
b() {
  echo "\$ $1 ninfer bench model --synthetic smollm2-135m --weights q4_g64 --prompt 512 --lanes 1 $2" >> $OUT/bench.txt
  env $1 NINFER_LOG=info timeout 30 $N bench model --synthetic smollm2-135m --weights q4_g64 --prompt 512 --lanes 1 $2 \
    --json $OUT/bench_model.jsonl 2>&1 | grep -E "programmatic|^(prompt|decode)  |error|panic" | sed -e "s/^.*decode step captured/decode step captured/" | sort | uniq -c >> $OUT/bench.txt
}
for round in 1 2; do b "" ""; b "" "--no-pdl"; done
t bench
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools. Over the following centuries the settlement grew into a market town, then a walled city with its own laws, its own coins and a cathedral whose towers could be seen from every road that led to it."
: > $OUT/compare.txt
for fx in tests/fixtures/tiny/*/; do
  lim=15; case $fx in *moe*) lim=45;; esac
  echo "\$ ninfer compare --model $fx --prompt <long> --tokens 64" >> $OUT/compare.txt
  NINFER_LOG=info timeout $lim $N compare --model "$fx" --prompt "$long" --tokens 64 >> $OUT/compare.txt 2>&1 || echo "FAILED $fx (exit $?)" >> $OUT/compare.txt
done
t compare
grep -E "PASS|FAIL|programmatic|panic|error" $OUT/compare.txt | sed -e 's/^.*fixtures\/tiny\///' | cut -c1-220 | head -40
cat $OUT/bench.txt
t done
