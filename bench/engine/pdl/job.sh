#!/usr/bin/env bash
# PDL job (branch pdl): qualify the families PDL touched (with PDL on), compare the GPU
# engine against the cpu backend on every tiny fixture (exact mode, PDL on, decode steps
# captured as graphs), then SmolLM2-135M (synthetic, q4_g64) decode with PDL on and off,
# RoPE folded into the decode attention or apart, fused and unfused.
# Staged in .gpu/pdl/: ninfer.xz (the branch's release binary), cache90.tgz (its sm_90
# kernels for the families below, compiled by the same binary), REV.
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
b "" ""
b "" "--no-pdl"
b "NINFER_ROPE_ATTENTION_APART=1" ""
b "NINFER_ROPE_ATTENTION_APART=1" "--no-pdl"
b "" "--unfused"
b "" "--unfused --no-pdl"
t "bench round 1"
timeout 70 $N qualify --filter rmsnorm,attn_,elementwise_,rope_,embedding_f32_f32,embedding_q4_g64_f32,loss_nll \
  --json $OUT/qualify.jsonl > $OUT/qualify.txt 2>&1; t "qualify rc $?"
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools. Over the following centuries the settlement grew into a market town, then a walled city with its own laws, its own coins and a cathedral whose towers could be seen from every road that led to it."
: > $OUT/compare.txt
for fx in tests/fixtures/tiny/*/; do
  echo "\$ ninfer compare --model $fx --prompt <long> --tokens 64" >> $OUT/compare.txt
  NINFER_LOG=info timeout 15 $N compare --model "$fx" --prompt "$long" --tokens 64 >> $OUT/compare.txt 2>&1 || echo "FAILED $fx" >> $OUT/compare.txt
done
t compare
b "" ""
b "" "--no-pdl"
t "bench round 2"
grep -E "FAIL" $OUT/qualify.txt | head -20
grep -E "checks:|^error" $OUT/qualify.txt
grep -E "PASS|FAIL|programmatic|panic|error" $OUT/compare.txt | sed -e 's/^.*fixtures\/tiny\///' | cut -c1-220 | head -40
cat $OUT/bench.txt
t done
