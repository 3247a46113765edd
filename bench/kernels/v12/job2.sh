#!/usr/bin/env bash
# v12 follow-up job: templates/ now holds fast.patch (the committed set, embedded in the
# binary). Qualifies the ring kernels with the SwiGLU prologue, runs the tuning job for the
# new set (its run1.toml is the profile to install), then decodes with that profile
# against the heuristics over one load (--profile-ab): synthetic 27B q4_g64 at 1 and 8
# lanes, synthetic SmolLM2 at 1 lane.
# Needs (carried): .gpu/v12b/{ninfer.xz,REV,kc.tgz} (kc.tgz: `ninfer kernels build --all
# --arch sm_90` with that binary). Output: $OUT/v12b.tgz, summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-380}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
G=.gpu/v12b
N=/tmp/v12b-ninfer
xz -dc $G/ninfer.xz > $N && chmod +x $N
mkdir -p .gpu && cp $N .gpu/ninfer && cp $G/REV .gpu/REV
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/v12b-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf $G/kc.tgz -C $NINFER_CACHE_DIR
FINAL=$OUT; O=/tmp/v12b-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
( sleep $((LIMIT - 10)); tar czf $FINAL/partial.tgz -C /tmp v12b-out ) > /dev/null 2>&1 &
PARTIAL=$!

timeout $(left 90) $N qualify --filter s2_swiglu,s3_swiglu,s4_swiglu --json $O/qualify.jsonl > $O/qualify.txt 2>&1; echo "qualify rc=$?" >> $O/qualify.txt
t qualify
OUT=$O/tune timeout $(left 120) bash scripts/gpu/tune.sh > $O/tune_job.txt 2>&1; echo "tune rc $?" >> $O/tune_job.txt
t tune
P=$O/tune/run1.toml
: > $O/decode_ab.txt
for m in "smollm2-135m 1" "qwen3.6-27b 1,8"; do
  set -- $m
  echo "\$ ninfer bench model --synthetic $1 --weights q4_g64 --prompt 16 --lanes $2 --decode-tokens 64 --profile run1.toml --profile-ab" >> $O/decode_ab.txt
  timeout $(left 220) $N bench model --synthetic $1 --weights q4_g64 --prompt 16 --warmup 0 --lanes $2 \
    --decode-tokens 64 --profile $P --profile-ab --json $O/decode_ab_$1.jsonl >> $O/decode_ab.txt 2>&1
  t "decode $1 rc $?"
done

pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $FINAL/v12b.tgz -C /tmp v12b-out
echo "===== summary"
cat $O/context.txt
tail -3 $O/qualify.txt
cat $O/tune/phases.txt 2>/dev/null; grep -E "same winner" $O/tune/table.txt 2>/dev/null | cut -c1-160; head -3 $O/tune/check.txt 2>/dev/null | cut -c1-160
grep -E "^decode  |^what|uses tuning|ignored" $O/decode_ab.txt | cut -c1-150
t done
