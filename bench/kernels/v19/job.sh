#!/usr/bin/env bash
# v19 job (prepared 2026-11-30, not run): the mma GEMV's weights through a per-warp
# cp.async ring (ring.patch: 3 stages of 4 groups x 16 rows, rows padded to 160 bytes, the
# register buffers and their shuffle swap gone; the plan's fixed shared memory grows by
# 120 KB at 16 warps, so K takes more K-ranges). Build the binary from main with
# `git apply bench/kernels/v19/ring.patch`, its kernels with `ninfer kernels build --all
# --arch sm_90`, stage them as below; compare with bench/kernels/v18/run1 (the same
# records at 2700991). Steps (timeouts cut to LIMIT):
#   qualify  ninfer qualify --filter linear_exact_mma
#   kernels  bench kernels 'linear_exact_mma step|linear_exact_mma q4_g64' (twice)
#   27b      bench model synthetic 27B q4_g64 --lanes 1,8 --no-profile
#   tune     scripts/gpu/tune.sh for this template set (run1.toml: the profile to install)
# Needs (carried): .gpu/v19/{ninfer.xz,REV,kc.tgz}. Output: $OUT/v19.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-500}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
STEPS="${STEPS:-qualify kernels 27b tune}"
want() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
G=.gpu/v19
N=/tmp/v19-ninfer
xz -dc $G/ninfer.xz > $N && chmod +x $N
mkdir -p .gpu && cp $N .gpu/ninfer && cp $G/REV .gpu/REV
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/v19-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf $G/kc.tgz -C $NINFER_CACHE_DIR
FINAL=$OUT; O=/tmp/v19-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
( sleep $((LIMIT - 8)); tar czf $FINAL/partial.tgz -C /tmp v19-out ) > /dev/null 2>&1 &
PARTIAL=$!
if want qualify; then
  timeout $(left 120) $N qualify --filter linear_exact_mma --json $O/qualify.jsonl > $O/qualify.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify.txt
  t qualify
fi
if want kernels; then
  for i in 1 2; do
    timeout $(left 60) $N bench kernels --filter "linear_exact_mma step|linear_exact_mma q4_g64" \
      --json $O/bench_kernels_$i.jsonl >> $O/bench_kernels.txt 2>&1
    echo "rc=$?" >> $O/bench_kernels.txt
  done
  t kernels
fi
if want 27b; then
  B="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --decode-tokens 64 --no-profile --lanes 1,8"
  echo "\$ ninfer $B" > $O/bench_27b.txt
  timeout $(left 200) $N $B --json $O/bench_27b.jsonl >> $O/bench_27b.txt 2>&1; echo "rc=$?" >> $O/bench_27b.txt
  t 27b
fi
if want tune; then
  OUT=$O/tune timeout $(left 150) bash scripts/gpu/tune.sh > $O/tune_job.txt 2>&1; echo "tune rc $?" >> $O/tune_job.txt
  t tune
fi
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $FINAL/v19.tgz -C /tmp v19-out
echo "===== summary"
cat $O/context.txt
grep -E "checks:|rc=" $O/qualify.txt | cut -c1-160
python3 -c "
import json,collections
d=collections.defaultdict(list)
for i in (1,2):
    for l in open('$O/bench_kernels_%d.jsonl'%i):
        r=json.loads(l)
        if 'mma' in r['route'] and ('step' in r['what'] or 'T=8 ' in r['shape'] or 'T=1 ' in r['shape']):
            d[(r['what'][:22], r['shape'])].append(round(r['median_us'],2))
for k,v in d.items(): print(k, v)
" 2>&1 | tail -n 14
grep -E "^decode  |^what|rc=" $O/bench_27b.txt | cut -c1-150
cat $O/tune/phases.txt 2>/dev/null | tail -n 2; grep -E "^linear_exact|^gdn|^attn" $O/tune/table.txt 2>/dev/null | head -3 | cut -c1-200
t done
