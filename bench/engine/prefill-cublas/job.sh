#!/usr/bin/env bash
# prefill-cublas job (H200): qualify the --prefill-cublas route (dequant bit for bit, the
# whole route against the f64 oracle), `ninfer compare` with and without the flag on every
# tiny fixture, prefill A/B (default route vs --prefill-cublas over one load) on synthetic
# SmolLM2 and the synthetic Qwen3.6-27B (q4_g64), then the route's per-shape profile at the 27B's linears.
# Run from the repository root with the binary at .gpu/prefill/ninfer.xz and the revision in
# .gpu/prefill/REV; text outputs under $OUT, JSON records in $OUT/json.tgz.
set -u
start=$(date +%s)
OUT="${OUT:-gpu-out}"; mkdir -p "$OUT"
J=/tmp/prefill-json; mkdir -p $J
D=.gpu/prefill
xz -dc $D/ninfer.xz > /tmp/ninfer && chmod +x /tmp/ninfer
N=/tmp/ninfer
export NINFER_CACHE_DIR=/tmp/ninfer-cache
export NINFER_REV="$(cat $D/REV)"
{ echo "revision: $NINFER_REV"; echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $OUT/context.txt
t() { echo "[$(( $(date +%s) - start )) s] $*"; tar czf $OUT/json.tgz -C $J .; }
timeout 120 $N qualify --filter prefill_cublas --json $J/qualify.jsonl > $OUT/qualify.txt 2>&1; t "qualify rc $?"
# A prompt of well over 64 tokens, so that the prefill takes the route.
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools. Over the following centuries the settlement grew into a market town, then a walled city with its own laws, its own coins and a cathedral whose towers could be seen from every road that led to it."
long="$long $long"
: > $OUT/compare.txt
for fx in tests/fixtures/tiny/*/; do
  for f in "" --prefill-cublas; do
    echo "\$ ninfer compare --model $fx --prompt <long x2> --tokens 32 $f" >> $OUT/compare.txt
    timeout 60 $N compare --model "$fx" --prompt "$long" --tokens 32 $f --json $J/compare.jsonl >> $OUT/compare.txt 2>&1 || echo "(exit $?)" >> $OUT/compare.txt
  done
done
t compare
timeout 60 $N bench model --synthetic smollm2-135m --weights q4_g64 --prompt 512,4096 --lanes 1 --no-profile --prefill-cublas-ab --json $J/bench_smollm2.jsonl > $OUT/bench_smollm2.txt 2>&1; t "smollm2 rc $?"
timeout 230 $N bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 512,4096 --lanes 1 --no-profile --prefill-cublas-ab --json $J/bench_27b.jsonl > $OUT/bench_27b.txt 2>&1; t "27b rc $?"
timeout 60 $N bench kernels --filter prefill_cublas --json $J/kernels.jsonl > $OUT/kernels.txt 2>&1; t "kernels rc $?"
grep -E "FAIL|checks:" $OUT/qualify.txt | tail -8
grep -vE '^\$' $OUT/compare.txt | sed -e 's/^.*fixtures\/tiny\///' | cut -c1-240
for f in $OUT/bench_*.txt; do echo "== $f"; grep -vE "^\s*$|^making|^measuring" $f; done
grep -E "prefill_cublas|cublasGemmEx" $OUT/kernels.txt | cut -c1-180 | head -45
