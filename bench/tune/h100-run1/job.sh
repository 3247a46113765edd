#!/usr/bin/env bash
# bench/tune h100-run1 (device job, carry [".gpu/r54"]; LIMIT s, default 540; PART=tune, then
# PART=e2e in a second call on the warm machine, which reads PART=tune's /tmp): bring up an
# H100 80GB HBM3 as a user would, with the full default `ninfer tune` (every family but the
# opt-in linear_a16, every token, lanes, state and context bucket) at the shapes of the
# synthetic 27B, 35B-A3B and SmolLM2 in q4_g64, twice; `tune compare` and `tune check` of
# the two; then the synthetic 27B q4_g64 (bf16 activations, the fast path) at 1 and 8 lanes
# with run 1's profile and with the heuristics (one process each, profile first), and
# SmolLM2 likewise. Outputs under $OUT: run1.toml (the profile to install as
# tuning/nvidia-h100-80gb-hbm3.toml), run2.toml, tune*.txt, run*.jsonl, compare.*,
# check.txt, e2e-*.txt/.jsonl, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-540}
source scripts/gpu/job-lib.sh
if [ "${PART:-tune}" = tune ]; then
job_init r54 "(bench/tune h100-run1: the H100's first profile)"
M=qwen3.6-27b,qwen3.6-35b-a3b,smollm2-135m
for i in 1 2; do
    t "tune run $i"
    timeout $(left 200) $B tune --synthetic $M --weights q4_g64 --out $O/run$i.toml \
        --json $O/run$i.jsonl > $O/tune$i.txt 2>&1; echo "exit $?" >> $O/tune$i.txt
done
$B tune compare $O/run1.toml $O/run2.toml --json $O/compare.json > $O/compare.txt 2>&1
echo "exit $?" >> $O/compare.txt
$B tune check $O/run1.toml > $O/check.txt 2>&1; echo "exit $?" >> $O/check.txt
else
    job_use r54; O=/tmp/r54-out
fi
e2e() { # $1 tag, $2 routes flag(s), rest: bench model args
    local tag=$1 routes=$2; shift 2
    t "e2e $tag"
    # shellcheck disable=SC2086
    timeout $(left 200) $B bench model "$@" $routes --device cuda --json $O/e2e-$tag.jsonl \
        > $O/e2e-$tag.txt 2>&1; echo "exit $?" >> $O/e2e-$tag.txt
}
if [ "${PART:-tune}" = tune ]; then
S="--synthetic smollm2-135m --weights q4_g64 --lanes 1,8 --prompt 512 --decode-tokens 256"
e2e smol-profile "--profile $O/run1.toml" $S
e2e smol-heur --no-profile $S
else
Q="--synthetic qwen3.6-27b --weights q4_g64 --activations bf16 --lanes 1,8 --prompt 16 --warmup 0 --decode-tokens 64"
e2e 27b-profile "--profile $O/run1.toml" $Q
e2e 27b-heur --no-profile $Q
fi
{
echo "===== summary"
cat $O/context.txt
grep -h -E '^(noise per key|[0-9]+ keys tuned|exit)' $O/tune1.txt $O/tune2.txt
grep -v -E '^(key|linear_exact|gdn_step|attn_split)' $O/compare.txt | tail -8
grep -E '^gdn_step' $O/compare.txt
tail -4 $O/check.txt
for f in smol-profile smol-heur 27b-profile 27b-heur; do
  [ -f $O/e2e-$f.txt ] || continue
  echo "-- $f"; grep -E '^(what|prompt|decode|floor)|exit' $O/e2e-$f.txt
done
t done
} | tee $OUT/summary.txt
cp $O/run1.toml $O/run2.toml $OUT/ 2>/dev/null
tar czf $OUT/h100-run1-${PART:-tune}.tgz -C /tmp r54-out
