#!/usr/bin/env bash
# The kernel job: `ninfer qualify` (every route against the f64 oracle), then
# `ninfer bench kernels` (ceilings, our kernels and cuBLAS in the same run).
#
# Run on the GPU machine from the repository root with .gpu/ staged by
# scripts/gpu/stage.sh. Writes logs and JSON under $OUT (default ./gpu-out).
# QUALIFY_FILTER / BENCH_FILTER narrow either step.
set -uo pipefail
source scripts/gpu/context.sh
B=.gpu/ninfer
export NINFER_CACHE_DIR="${NINFER_CACHE_DIR:-/tmp/ninfer-cache}"

echo '$ ninfer kernels build --all' > "$OUT/build.txt"
$B kernels build --all >> "$OUT/build.txt" 2>&1

qargs=(qualify --json "$OUT/qualify.jsonl")
[ -n "${QUALIFY_FILTER:-}" ] && qargs+=(--filter "$QUALIFY_FILTER")
echo "\$ ninfer ${qargs[*]}" > "$OUT/qualify.txt"
$B "${qargs[@]}" >> "$OUT/qualify.txt" 2>&1
qrc=$?

bargs=(bench kernels --json "$OUT/bench.jsonl" --rev "$rev")
[ -n "${BENCH_FILTER:-}" ] && bargs+=(--filter "$BENCH_FILTER")
echo "\$ ninfer ${bargs[*]}" > "$OUT/bench.txt"
$B "${bargs[@]}" >> "$OUT/bench.txt" 2>&1
brc=$?

cat "$OUT/build.txt" | tail -2
grep -E "FAIL" "$OUT/qualify.txt" | head -20
grep -E "checks:|^error" "$OUT/qualify.txt"
cat "$OUT/bench.txt"
echo "qualify exit $qrc, bench exit $brc"
