#!/usr/bin/env bash
# The quality-trades job: ninfer-perplexity on the whole wikitext-2 test file (context 4096,
# stride 2048) at baseline and with each precision flag, on the default model, on the GPU.
# Needs .gpu/ninfer-perplexity and .gpu/wiki.test.raw; MODE_ARGS picks the GPU mode
# (default: exact mode, --activations exact --weights f32). Writes $OUT/quality.jsonl and quality.txt.
set -uo pipefail
source scripts/gpu/context.sh
export NINFER_CACHE_DIR="${NINFER_CACHE_DIR:-/tmp/ninfer-cache}"
export NINFER_REV="$rev"
P=.gpu/ninfer-perplexity
mode=(${MODE_ARGS:---activations exact --weights f32})
: > "$OUT/quality.txt"
for flag in "" --embedding-q4 --embedding-q6 --lm-head-q4 --lm-head-q6; do
    echo "\$ ninfer-perplexity wiki.test.raw --device cuda ${mode[*]} $flag" >> "$OUT/quality.txt"
    timeout "${EACH_TIMEOUT:-150}" $P .gpu/wiki.test.raw --device cuda "${mode[@]}" $flag --json "$OUT/quality.jsonl" 2>/dev/null >> "$OUT/quality.txt"
    echo "exit $?" >> "$OUT/quality.txt"
done
cat "$OUT/quality.txt"
