#!/usr/bin/env bash
# The tuning job (issue 9): two `ninfer tune` runs over the synthetic 27B and 35B-A3B
# (q4_g64) and SmolLM2 (q4_g64 and q8_g32), both route families (linear_exact; gdn_step for
# the GDN layers of the 27B and 35B-A3B: f32 and f16 state, 1, 2, 4 and 8 lanes), `ninfer
# tune compare` of the two (same winners wherever the choice is clear of the noise; run 1's
# picks against the heuristics in run 2's timings, per bucket), `ninfer tune check` of run
# 1's profile on this device, then decode speed with run 1's profile against the built-in
# heuristics (`ninfer bench model --profile` / `--no-profile`, alternating) on SmolLM2 q8_g32
# and q4_g64 and on the synthetic 27B q4_g64.
#
# Run on the GPU machine from the repository root with .gpu/ staged by scripts/gpu/stage.sh.
# The SmolLM2 decode comparison needs the default model in $NINFER_CACHE_DIR/models and is
# skipped (with a line saying so) without it; the tuning itself needs no model file. Writes
# under $OUT (default ./gpu-out): run1.toml (the profile to commit as tuning/<device>.toml),
# run2.toml, run*.jsonl (every candidate's timing), tune*.txt, compare.txt/.json, check.txt,
# decode.txt/.jsonl. REPS (default 15) sets the samples per candidate; SKIP_27B=1 skips the
# 27B decode comparison (the longest step: making 27 B random weights).
set -uo pipefail
source scripts/gpu/context.sh
B=.gpu/ninfer
export NINFER_CACHE_DIR="${NINFER_CACHE_DIR:-/tmp/ninfer-cache}"
export NINFER_REV="$rev"
REPS="${REPS:-15}"
rc=0

tune_run() { # $1: run number
    local out="$OUT/run$1.toml" log="$OUT/tune$1.txt"
    rm -f "$out"
    local start=$SECONDS
    for args in "--synthetic qwen3.6-27b,qwen3.6-35b-a3b,smollm2-135m --weights q4_g64" \
                "--synthetic smollm2-135m --weights q8_g32"; do
        echo "\$ ninfer tune $args --reps $REPS --out $out --json $OUT/run$1-part.jsonl" >> "$log"
        # shellcheck disable=SC2086
        $B tune $args --reps "$REPS" --out "$out" --json "$OUT/run$1-part.jsonl" >> "$log" 2>&1 || rc=1
        cat "$OUT/run$1-part.jsonl" >> "$OUT/run$1.jsonl" 2>/dev/null
        rm -f "$OUT/run$1-part.jsonl"
    done
    echo "tune run $1: $((SECONDS - start)) s" | tee -a "$log"
}
: > "$OUT/run1.jsonl"; : > "$OUT/run2.jsonl"; : > "$OUT/tune1.txt"; : > "$OUT/tune2.txt"
tune_run 1
tune_run 2

echo "\$ ninfer tune compare run1.toml run2.toml" > "$OUT/compare.txt"
$B tune compare "$OUT/run1.toml" "$OUT/run2.toml" --json "$OUT/compare.json" >> "$OUT/compare.txt" 2>&1
crc=$?

echo "\$ ninfer tune check run1.toml" > "$OUT/check.txt"
$B tune check "$OUT/run1.toml" >> "$OUT/check.txt" 2>&1 || rc=1

# Decode with the profile and with the heuristics, alternating (profile, heuristics, and
# for SmolLM2 again) so that drift shows as the spread within each.
: > "$OUT/decode.txt"; : > "$OUT/decode.jsonl"
decode() { # $1: rounds, $2: label, rest: bench model arguments
    local rounds="$1" label="$2"; shift 2
    for round in $(seq "$rounds"); do
        for routes in "--profile $OUT/run1.toml" "--no-profile"; do
            echo "\$ ninfer bench model $* $routes" >> "$OUT/decode.txt"
            # shellcheck disable=SC2086
            timeout 300 $B bench model "$@" $routes --device cuda --lanes 1 --prompt 16 \
                --json "$OUT/decode-one.jsonl" > "$OUT/decode-one.txt" 2>&1 || rc=1
            cat "$OUT/decode-one.txt" >> "$OUT/decode.txt"
            # The table row (what, lanes, tokens, context, tokens/s, ...), not the progress line.
            tps=$(grep -E '^decode +1 +[0-9]+ +[0-9]+ ' "$OUT/decode-one.txt" | awk '{print $5}')
            printf '%-26s round %s %-13s decode %s tok/s\n' "$label" "$round" \
                "$([ "$routes" = "--no-profile" ] && echo heuristics || echo profile)" "$tps" \
                | tee -a "$OUT/decode-summary.txt"
            cat "$OUT/decode-one.jsonl" >> "$OUT/decode.jsonl" 2>/dev/null
        done
    done
}
: > "$OUT/decode-summary.txt"
if [ -f "$NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf" ]; then
    decode 2 "SmolLM2 q8_g32" --weights q8_g32 --decode-tokens 256
    decode 2 "SmolLM2 q4_g64" --weights q4_g64 --decode-tokens 256
else
    echo "SmolLM2 decode skipped: no default model in $NINFER_CACHE_DIR/models" | tee -a "$OUT/decode-summary.txt"
fi
if [ "${SKIP_27B:-0}" != 1 ]; then
    decode 1 "synthetic 27B q4_g64" --synthetic qwen3.6-27b --weights q4_g64 --decode-tokens 64
fi
rm -f "$OUT/decode-one.txt" "$OUT/decode-one.jsonl"

tail -n 3 "$OUT/tune1.txt" "$OUT/tune2.txt"
# The GDN rows of run 1's table and of the comparison, the comparison's summary lines and any
# candidate not timed (the whole tables are in the files).
grep -h '^gdn_step/' "$OUT/tune1.txt"
grep -h '^gdn_step/' "$OUT/compare.txt"
grep -v -E '^(linear_exact|gdn_step)/' "$OUT/compare.txt"
grep -h '^not timed' "$OUT/tune1.txt" "$OUT/tune2.txt" | head -20
cat "$OUT/check.txt"
cat "$OUT/decode-summary.txt"
echo "tune/check/bench exit $rc, compare exit $crc"
