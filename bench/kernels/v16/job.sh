#!/usr/bin/env bash
# v16 job: the mma GEMV's RMSNorm prologue without its pass over the row (x * w staged,
# each block summing the squares of its own K-range as it stages; 1 / rms applied to the
# outputs in the kernel with one K-range, in splitk_sum.cu from every K-range's sums with
# several). The binary embeds the change. Steps (timeouts cut to LIMIT):
#   qualify  ninfer qualify --filter linear_exact_mma
#   kernels  bench kernels 'linear_exact_mma step|linear_exact_mma q4_g64' (twice)
#   27b      bench model synthetic 27B q4_g64 --lanes 1,8 --no-profile
#   tune     scripts/gpu/tune.sh for this template set (run1.toml: the profile to install)
# Needs (carried): .gpu/$V/{ninfer.xz,REV,kc.tgz}, V defaulting to v16 (bench/kernels/v19
# runs the same steps on its own binary with V=v19). Output: $OUT/$V.tgz; summary last.
set -u
V=${V:-v16}
T0=$(date +%s); LIMIT=${LIMIT:-500}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
STEPS="${STEPS:-qualify kernels 27b tune}"
want() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
G=.gpu/$V
N=/tmp/$V-ninfer
xz -dc $G/ninfer.xz > $N && chmod +x $N
mkdir -p .gpu && cp $N .gpu/ninfer && cp $G/REV .gpu/REV
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/$V-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf $G/kc.tgz -C $NINFER_CACHE_DIR
FINAL=$OUT; O=/tmp/$V-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
( sleep $((LIMIT - 8)); tar czf $FINAL/partial.tgz -C /tmp $V-out ) > /dev/null 2>&1 &
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
tar czf $FINAL/$V.tgz -C /tmp $V-out
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
