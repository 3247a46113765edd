#!/usr/bin/env bash
# v18 job: decode attention's split mode runs only the splits that hold keys (a captured
# grid is planned for the capacity; at context 20 of 512, one split of four holds keys),
# and a lone live split writes the output itself (no partial, no count, no combine).
# The binary embeds the change. Steps (timeouts cut to LIMIT):
#   qualify  ninfer qualify --filter attn_ (every attention route)
#   compare  ninfer compare, cuda against cpu: synthetic SmolLM2 at 1 and 8 lanes, tiny
#            qwen35_r2 and llama at 1 lane (greedy tokens and logits)
#   tune     scripts/gpu/tune.sh for this template set (run1.toml: the profile to install)
#   bench    bench model with run1.toml against the heuristics (--profile-ab): synthetic
#            SmolLM2 at 1 and 8 lanes, 64 and 256 decode steps; the default model (its parts
#            in /root/models from the calls before, part.ad carried) at 1 and 8 lanes,
#            256 steps, prompt 512 and 4096
# Needs (carried): .gpu/v18/{ninfer.xz,REV,kc.tgz}, .gpu/part.ad, .gpu/sha256.
# Output: $OUT/v18.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-420}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
G=.gpu/v18
N=/tmp/v18-ninfer
xz -dc $G/ninfer.xz > $N && chmod +x $N
mkdir -p .gpu && cp $N .gpu/ninfer && cp $G/REV .gpu/REV
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/v18-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf $G/kc.tgz -C $NINFER_CACHE_DIR
FINAL=$OUT; O=/tmp/v18-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
( sleep $((LIMIT - 8)); tar czf $FINAL/partial.tgz -C /tmp v18-out ) > /dev/null 2>&1 &
PARTIAL=$!
mkdir -p $NINFER_CACHE_DIR/models
M=$NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf
cat /root/models/part.aa /root/models/part.ab /root/models/part.ac .gpu/part.ad > $M 2>/dev/null
sha256sum $M | cut -d' ' -f1 | cmp -s - .gpu/sha256 && echo "model sha256 ok" >> $O/context.txt || echo "MODEL SHA256 MISMATCH" >> $O/context.txt
timeout $(left 120) $N qualify --filter attn_ --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
: > $O/compare.txt
for a in "--synthetic smollm2-135m --tokens 32" "--synthetic smollm2-135m --lanes 8 --tokens 12" \
         "--model tests/fixtures/tiny/qwen35_r2 --tokens 32" "--model tests/fixtures/tiny/llama --tokens 32"; do
  echo "\$ ninfer compare $a" >> $O/compare.txt
  timeout $(left 40) $N compare $a --json $O/compare.jsonl >> $O/compare.txt 2>&1; echo "rc=$?" >> $O/compare.txt
done
t compare
OUT=$O/tune timeout $(left 120) bash scripts/gpu/tune.sh > $O/tune_job.txt 2>&1; echo "tune rc $?" >> $O/tune_job.txt
t tune
P=$O/tune/run1.toml
: > $O/bench.txt
for m in "--synthetic smollm2-135m --prompt 16 --decode-tokens 64" "--synthetic smollm2-135m --prompt 16 --decode-tokens 256" \
         "--model $M --prompt 512,4096 --decode-tokens 256"; do
  echo "\$ ninfer bench model $m --weights q4_g64 --lanes 1,8 --profile run1.toml --profile-ab" >> $O/bench.txt
  timeout $(left 60) $N bench model $m --weights q4_g64 --warmup 0 --lanes 1,8 --profile $P --profile-ab \
    --json $O/bench.jsonl >> $O/bench.txt 2>&1; echo "rc=$?" >> $O/bench.txt
done
t bench
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $FINAL/v18.tgz -C /tmp v18-out
echo "===== summary"
cat $O/context.txt
grep -E "checks:|rc=" $O/qualify.txt | cut -c1-160
grep -E "identical|DIFFER|FAIL|rc=[1-9]" $O/compare.txt | cut -c1-200
cat $O/tune/phases.txt 2>/dev/null | tail -n 1; grep -E "^linear_exact:|^attn_split:" $O/tune/table.txt 2>/dev/null | cut -c1-200
grep -E "^\\\$|^prompt  |^decode  |rc=" $O/bench.txt | cut -c1-150
t done
