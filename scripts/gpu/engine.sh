#!/usr/bin/env bash
# The engine job: qualify the ops the cuda backend uses, then `ninfer compare` (GPU engine
# against the cpu backend: greedy tokens and logits) on every tiny fixture and on the
# default model, then a timed `ninfer run --device cuda`.
#
# Run on the GPU machine from the repository root with .gpu/ staged by
# scripts/gpu/stage.sh. The default model must be in $NINFER_CACHE_DIR/models (the machine
# has no network: carry it in). Writes logs and JSON under $OUT (default ./gpu-out).
# QUALIFY_FILTER narrows the qualify step ("skip" skips it).
set -uo pipefail
source scripts/gpu/context.sh
B=.gpu/ninfer
export NINFER_CACHE_DIR="${NINFER_CACHE_DIR:-/tmp/ninfer-cache}"

qrc=0
if [ "${QUALIFY_FILTER:-}" != "skip" ]; then
    qargs=(qualify --json "$OUT/qualify.jsonl" --filter "${QUALIFY_FILTER:-linear_exact,attention,elementwise,rope,rmsnorm,embedding_f32,embedding_q8,embedding_bf16}")
    echo "\$ ninfer ${qargs[*]}" > "$OUT/qualify.txt"
    $B "${qargs[@]}" >> "$OUT/qualify.txt" 2>&1
    qrc=$?
fi

: > "$OUT/compare.txt"
crc=0
for fx in tests/fixtures/tiny/*/; do
    for w in f32 bf16; do
        echo "\$ ninfer compare --model $fx --weights $w" >> "$OUT/compare.txt"
        $B compare --model "$fx" --weights "$w" --json "$OUT/compare.jsonl" >> "$OUT/compare.txt" 2>&1 || crc=1
    done
done
for w in f32 q8_g32; do
    echo "\$ ninfer compare --weights $w   (default model)" >> "$OUT/compare.txt"
    $B compare --weights "$w" --json "$OUT/compare.jsonl" >> "$OUT/compare.txt" 2>&1 || crc=1
done

echo '$ ninfer run --device cuda --max-tokens 64 "The capital of France is"' > "$OUT/run.txt"
$B run --device cuda --max-tokens 64 "The capital of France is" >> "$OUT/run.txt" 2>&1
rrc=$?

grep -E "FAIL" "$OUT/qualify.txt" 2>/dev/null | head -20
grep -E "checks:|^error" "$OUT/qualify.txt" 2>/dev/null
grep -vE '^\$' "$OUT/compare.txt" | cut -c1-400
tail -3 "$OUT/run.txt"
echo "qualify exit $qrc, compare exit $crc, run exit $rrc"
