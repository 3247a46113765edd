#!/usr/bin/env bash
# v11 follow-up job (run after job.sh showed the win): templates/ now holds both patches
# (the `both` set). With the fce3bce binary and NINFER_TEMPLATES=templates (same content
# hash as a binary built from this checkout): the whole qualify, ninfer compare on synthetic
# SmolLM2 and two GDN fixtures, the tuning job for the new template set (its run1.toml is
# the profile to install), then decode with that profile against the heuristics over one
# load (--profile-ab): synthetic 27B and SmolLM2 q4_g64, one lane.
# Needs (carried): .gpu/v11/{ninfer.xz,REV,kc.tgz}. Output: $OUT/v11b.tgz, summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-560}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
G=.gpu/v11
N=/tmp/v11-ninfer
xz -dc $G/ninfer.xz > $N && chmod +x $N
mkdir -p .gpu && cp $G/REV .gpu/REV && cp $N .gpu/ninfer
export NINFER_TEMPLATES=$PWD/templates
export NINFER_REV="$(cat $G/REV)+templates"
export NINFER_CACHE_DIR=/tmp/v11-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf $G/kc.tgz -C $NINFER_CACHE_DIR
FINAL=$OUT; O=/tmp/v11b-out; rm -rf $O; mkdir -p $O
{ echo "binary: $(cat $G/REV); templates: checkout (v11 patches applied)"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
( sleep ${PARTIAL_AFTER:-545}; tar czf $FINAL/partial.tgz -C /tmp v11b-out ) > /dev/null 2>&1 &
PARTIAL=$!

timeout $(left 150) $N qualify --json $O/qualify.jsonl > $O/qualify.txt 2>&1; echo "qualify rc=$?" >> $O/qualify.txt
t qualify
: > $O/compare.txt
for m in "--synthetic smollm2-135m --tokens 64 --lanes 1" "--synthetic smollm2-135m --tokens 12 --lanes 8" \
         "--model tests/fixtures/tiny/qwen35_r2 --tokens 32 --lanes 1" "--model tests/fixtures/tiny/qwen3_next --tokens 16 --lanes 8"; do
  echo "\$ ninfer compare $m" >> $O/compare.txt
  # shellcheck disable=SC2086
  timeout $(left 60) $N compare $m --json $O/compare.jsonl >> $O/compare.txt 2>&1 || echo "FAILED $m" >> $O/compare.txt
done
t compare
OUT=/tmp/v11b-out/tune timeout $(left 120) bash scripts/gpu/tune.sh > $O/tune_job.txt 2>&1; echo "tune rc $?" >> $O/tune_job.txt
t tune
P=$O/tune/run1.toml
for m in smollm2-135m qwen3.6-27b; do
  echo "\$ ninfer bench model --synthetic $m --weights q4_g64 --prompt 16 --lanes 1 --decode-tokens 64 --profile run1.toml --profile-ab" >> $O/decode_ab.txt
  timeout $(left 200) $N bench model --synthetic $m --weights q4_g64 --prompt 16 --warmup 0 --lanes 1 \
    --decode-tokens 64 --profile $P --profile-ab --json $O/decode_ab_$m.jsonl >> $O/decode_ab.txt 2>&1
  t "decode $m rc $?"
done

pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $FINAL/v11b.tgz -C /tmp v11b-out
echo "===== summary"
cat $O/context.txt
tail -2 $O/qualify.txt
grep -iE "identical|differ|FAILED" $O/compare.txt | cut -c1-150
cat $O/tune/phases.txt 2>/dev/null; grep -E "slower|same winner" $O/tune/table.txt 2>/dev/null | cut -c1-160; tail -3 $O/tune/check.txt 2>/dev/null
grep -E "decode|step" $O/decode_ab.txt | cut -c1-170
t done
