#!/usr/bin/env bash
# The tuning job (issue 9), sized to fit about 300 s: two `ninfer tune` runs over the
# decode shapes (T = 1, one lane) of the synthetic Qwen3.6-27B, Qwen3.6-35B-A3B and
# SmolLM2-135M in q4_g64 (all three families: linear_exact, gdn_step for the GDN layers of
# the 27B and 35B-A3B, attn_split at the contexts of $CONTEXTS), `ninfer tune compare` of
# the two (same winners wherever the choice is clear of the noise, and the per-bucket table
# of run 1's picks against the heuristics, both timed in run 2: table.txt), `ninfer tune
# check` of run 1's profile, then decode speed with run 1's profile against the built-in
# heuristics (`ninfer bench model --profile` / `--no-profile`), alternating A/B/A/B in this
# job: synthetic SmolLM2 q4_g64 at a short context (cache capacity 512) and at about 3.6k
# (capacity 4096), and with E2E_27B=1 the synthetic 27B (one A/B round; making its random
# weights takes minutes). Prints the seconds of each phase.
#
# Run on the GPU machine from the repository root with the binary at $B (default
# .gpu/ninfer, as scripts/gpu/stage.sh leaves it). Writes under $OUT (default ./gpu-out):
# run1.toml (the profile to install as tuning/<device>.toml), run2.toml, run*.jsonl (every
# candidate's timing), tune*.txt, compare.txt/.json, table.txt, check.txt,
# decode.txt/.jsonl, decode-summary.txt, phases.txt. Knobs: REPS (replays per round,
# default 10), ROUNDS (default 3), CONTEXTS (default 512,4096), E2E_ROUNDS (default 2),
# MODELS (default qwen3.6-27b,qwen3.6-35b-a3b,smollm2-135m), E2E_LONG=0 skips the 3.5k
# context decode. A16=1 (opt-in) then tunes the linear_a16 family (the bf16-activation
# prefill tile, at the buckets of A16_TOKENS, default 64,256,1024,4096) for the same models
# into a copy of run 1's profile (a16.toml, merged; a16.txt, a16.jsonl), under its own
# timeout (A16_TIMEOUT, default 360 s), after everything else, so that a failure there
# cannot lose the other families' profile.
set -uo pipefail
source scripts/gpu/context.sh
B="${B:-.gpu/ninfer}"
export NINFER_CACHE_DIR="${NINFER_CACHE_DIR:-/tmp/ninfer-cache}"
export NINFER_REV="$rev"
REPS="${REPS:-10}"
ROUNDS="${ROUNDS:-3}"
MODELS="${MODELS:-qwen3.6-27b,qwen3.6-35b-a3b,smollm2-135m}"
CONTEXTS="${CONTEXTS:-512,4096}"
E2E_ROUNDS="${E2E_ROUNDS:-2}"
rc=0
job_start=$SECONDS
: > "$OUT/phases.txt"
phase() { # $1: name, $2: start seconds
    printf '%-34s %4d s\n' "$1" $((SECONDS - $2)) | tee -a "$OUT/phases.txt"
}

tune_run() { # $1: run number
    local out="$OUT/run$1.toml" log="$OUT/tune$1.txt" start=$SECONDS
    rm -f "$out"
    local args=(--synthetic "$MODELS" --weights q4_g64
                --tokens 1 --lanes 1 --gdn-state f32 --kv f32 --contexts "$CONTEXTS"
                --reps "$REPS" --rounds "$ROUNDS" --out "$out" --json "$OUT/run$1.jsonl")
    echo "\$ ninfer tune ${args[*]}" > "$log"
    timeout 200 "$B" tune "${args[@]}" >> "$log" 2>&1 || rc=1
    phase "tune run $1" "$start"
}
tune_run 1
tune_run 2

start=$SECONDS
echo "\$ ninfer tune compare run1.toml run2.toml" > "$OUT/compare.txt"
"$B" tune compare "$OUT/run1.toml" "$OUT/run2.toml" --json "$OUT/compare.json" >> "$OUT/compare.txt" 2>&1
crc=$?
# The per-bucket table: each key's heuristic route against run 1's pick, both timed in
# run 2 (held out), with the verdict of the two runs' picks.
{
    echo "# per bucket: heuristics vs run 1's pick, both timed in run 2 (us per launch)"
    grep -E '^(key|linear_exact|gdn_step|attn_split)' "$OUT/compare.txt"
} > "$OUT/table.txt"
echo "\$ ninfer tune check run1.toml" > "$OUT/check.txt"
"$B" tune check "$OUT/run1.toml" >> "$OUT/check.txt" 2>&1 || rc=1
phase "compare and check" "$start"

# Decode with the profile and with the heuristics, alternating, so that drift shows as the
# spread within each.
: > "$OUT/decode.txt"; : > "$OUT/decode.jsonl"; : > "$OUT/decode-summary.txt"
decode() { # $1: rounds, $2: label, rest: bench model arguments
    local rounds="$1" label="$2"; shift 2
    for round in $(seq "$rounds"); do
        for routes in "--profile $OUT/run1.toml" "--no-profile"; do
            echo "\$ ninfer bench model $* $routes" >> "$OUT/decode.txt"
            # shellcheck disable=SC2086
            timeout 240 "$B" bench model "$@" $routes --device cuda --lanes 1 --prompt 16 \
                --json "$OUT/decode-one.jsonl" > "$OUT/decode-one.txt" 2>&1 || rc=1
            cat "$OUT/decode-one.txt" >> "$OUT/decode.txt"
            # The table row (what, lanes, tokens, context, tokens/s, ...), not the progress line.
            tps=$(grep -E '^decode +1 +[0-9]+ +[0-9]+ ' "$OUT/decode-one.txt" | awk '{print $5}')
            printf '%-34s round %s %-11s decode %s tok/s\n' "$label" "$round" \
                "$([ "$routes" = "--no-profile" ] && echo heuristics || echo profile)" "$tps" \
                | tee -a "$OUT/decode-summary.txt"
            cat "$OUT/decode-one.jsonl" >> "$OUT/decode.jsonl" 2>/dev/null
        done
    done
}
start=$SECONDS
decode "$E2E_ROUNDS" "synthetic SmolLM2 q4_g64 ctx 16" \
    --synthetic smollm2-135m --weights q4_g64 --decode-tokens 256
phase "e2e SmolLM2 short context" "$start"
if [ "${E2E_LONG:-1}" = 1 ]; then
    start=$SECONDS
    decode "$E2E_ROUNDS" "synthetic SmolLM2 q4_g64 ctx 3500" \
        --synthetic smollm2-135m --weights q4_g64 --decode-context 3500 --decode-tokens 128
    phase "e2e SmolLM2 3.5k context" "$start"
fi
if [ "${E2E_27B:-0}" = 1 ]; then
    start=$SECONDS
    decode 1 "synthetic 27B q4_g64 ctx 16" --synthetic qwen3.6-27b --weights q4_g64 --decode-tokens 64
    phase "e2e 27B" "$start"
fi
rm -f "$OUT/decode-one.txt" "$OUT/decode-one.jsonl"
if [ "${A16:-0}" = 1 ]; then
    start=$SECONDS
    cp "$OUT/run1.toml" "$OUT/a16.toml" 2>/dev/null
    a16_args=(--synthetic "$MODELS" --weights q4_g64 --family linear_a16
              --prefill-tokens "${A16_TOKENS:-64,256,1024,4096}"
              --reps "$REPS" --rounds "$ROUNDS" --out "$OUT/a16.toml" --json "$OUT/a16.jsonl")
    echo "\$ ninfer tune ${a16_args[*]}" > "$OUT/a16.txt"
    timeout "${A16_TIMEOUT:-360}" "$B" tune "${a16_args[@]}" >> "$OUT/a16.txt" 2>&1 || rc=1
    phase "tune linear_a16" "$start"
fi
phase "whole job" "$job_start"

grep -h -E '^(noise per key|[0-9]+ keys tuned)' "$OUT/tune1.txt" "$OUT/tune2.txt"
grep -h '^not timed' "$OUT/tune1.txt" "$OUT/tune2.txt" | head -20
grep -v -E '^(key|linear_exact|gdn_step|attn_split)' "$OUT/compare.txt"
grep -E 'DIFFER|^attn_split|^gdn_step' "$OUT/compare.txt"
cat "$OUT/check.txt" "$OUT/decode-summary.txt" "$OUT/phases.txt"
if [ "${A16:-0}" = 1 ]; then
    grep -E '^(key|linear_a16|noise per key|[0-9]+ keys tuned|not timed)' "$OUT/a16.txt" | head -40
fi
echo "tune/check/bench exit $rc, compare exit $crc"
