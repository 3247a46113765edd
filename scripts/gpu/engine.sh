#!/usr/bin/env bash
# The engine job: qualify the ops the cuda backend uses, then `ninfer compare` (GPU engine
# against the cpu backend: greedy tokens and logits) on every tiny fixture and on the
# default model, in exact mode (f32) and in the bf16 tensor-core mode, then timed
# `ninfer run --device cuda` in both modes.
#
# Run on the GPU machine from the repository root with .gpu/ staged by
# scripts/gpu/stage.sh. The default model must be in $NINFER_CACHE_DIR/models (the machine
# has no network: carry it in). Writes logs and JSON under $OUT (default ./gpu-out).
# QUALIFY_FILTER narrows the qualify step ("skip" skips it).
set -uo pipefail
source scripts/gpu/context.sh
B=.gpu/ninfer
export NINFER_CACHE_DIR="${NINFER_CACHE_DIR:-/tmp/ninfer-cache}"
export NINFER_REV="$rev"

qrc=0
if [ "${QUALIFY_FILTER:-}" != "skip" ]; then
    qargs=(qualify --json "$OUT/qualify.jsonl" --filter "${QUALIFY_FILTER:-linear_exact,attention,elementwise,rope,rmsnorm,embedding_f32_f32,embedding_q8_g32_f32}")
    echo "\$ ninfer ${qargs[*]}" > "$OUT/qualify.txt"
    $B "${qargs[@]}" >> "$OUT/qualify.txt" 2>&1
    qrc=$?
fi

# A prompt past 64 tokens sends the qwen35 models' GDN layers through the chunked prefill.
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools. Over the following centuries the settlement grew into a market town, then a walled city with its own laws, its own coins and a cathedral whose towers could be seen from every road that led to it."
: > "$OUT/compare.txt"
crc=0
cmp() {
    echo "\$ ninfer compare $*" >> "$OUT/compare.txt"
    timeout 120 $B compare "$@" --json "$OUT/compare.jsonl" >> "$OUT/compare.txt" 2>&1 || crc=1
}
for fx in tests/fixtures/tiny/*/; do
    cmp --model "$fx" --prompt "$long"
    cmp --model "$fx" --activations bf16
done
cmp --prompt "$long"
for w in f32 q8_g32 bf16; do cmp --activations bf16 --weights "$w"; done

: > "$OUT/run.txt"
for mode in "--activations exact --weights f32" "--activations bf16 --weights f32" "--activations bf16 --weights q8_g32" "--activations bf16 --weights q4_1_g32"; do
    echo "\$ ninfer run --device cuda $mode --max-tokens 256 \"Write a long story about the sea.\"" >> "$OUT/run.txt"
    $B run --device cuda $mode --max-tokens 256 --chat "Write a long story about the sea." 2>&1 >/dev/null | tail -1 >> "$OUT/run.txt"
done

grep -E "FAIL" "$OUT/qualify.txt" 2>/dev/null | head -20
grep -E "checks:|^error" "$OUT/qualify.txt" 2>/dev/null
grep -vE '^\$' "$OUT/compare.txt" | sed -e 's/^.*fixtures\/tiny\///' -e 's/^\/tmp.*gguf/SmolLM2/' | cut -c1-300
cat "$OUT/run.txt"
echo "qualify exit $qrc, compare exit $crc"
