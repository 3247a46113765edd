#!/usr/bin/env bash
# v15 job: the mma GEMV's weights kept in flight longer (prefetch.patch on
# templates/linear/gemv_mma.cu): both register buffers issued before the RMS sum and the
# staging (not only the first), each buffer loaded again right after it is multiplied,
# the next pass's first buffers issued before the pass's reduction, and the RMS prologue's
# sum-of-squares loop unrolled by 4. Template sets (NINFER_TEMPLATES, one binary):
#   base = templates/ as committed;  pf = + prefetch.patch
# Steps (timeouts cut to LIMIT):
#   qualify  ninfer qualify --filter linear_exact_mma with pf
#   kernels  bench kernels 'linear_exact_mma q4_g64|linear_exact_mma step': base pf base pf
#   regs     ncu: registers and duration of pf's T = 8 plain launch
#   27b      bench model synthetic 27B q4_g64 --lanes 8 --no-profile with pf
# Needs (carried): .gpu/v15/{ninfer.xz,REV,kc.tgz} (kc.tgz: every kernel of both sets,
# sm_90). Output: $OUT/v15.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-420}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
STEPS="${STEPS:-qualify kernels regs 27b}"
want() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
G=.gpu/v15
P=bench/kernels/v15
N=/tmp/v15-ninfer
xz -dc $G/ninfer.xz > $N && chmod +x $N
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/v15-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf $G/kc.tgz -C $NINFER_CACHE_DIR
FINAL=$OUT; O=/tmp/v15-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV (binary); templates: checkout + $P/prefetch.patch"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
( sleep $((LIMIT - 8)); tar czf $FINAL/partial.tgz -C /tmp v15-out ) > /dev/null 2>&1 &
PARTIAL=$!
rm -rf /tmp/t_base /tmp/t_pf; cp -r templates /tmp/t_base; cp -r templates /tmp/t_pf
patch -s -d /tmp/t_pf -p1 < $P/prefetch.patch || echo "PATCH FAILED" >> $O/context.txt
if want qualify; then
  NINFER_TEMPLATES=/tmp/t_pf timeout $(left 120) $N qualify --filter linear_exact_mma --json $O/qualify_pf.jsonl > $O/qualify_pf.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify_pf.txt
  t qualify
fi
if want kernels; then
  i=0
  for v in base pf base pf; do
    i=$((i + 1))
    echo "\$ NINFER_TEMPLATES=t_$v ninfer bench kernels --filter 'linear_exact_mma q4_g64|linear_exact_mma step'" >> $O/bench_kernels.txt
    NINFER_REV="$NINFER_REV+$v" NINFER_TEMPLATES=/tmp/t_$v timeout $(left 60) $N bench kernels \
      --filter "linear_exact_mma q4_g64|linear_exact_mma step" --json $O/bench_kernels_${i}_$v.jsonl >> $O/bench_kernels.txt 2>&1
    echo "rc=$?" >> $O/bench_kernels.txt
  done
  t kernels
fi
if want regs; then
  NINFER_TEMPLATES=/tmp/t_pf timeout $(left 60) ncu --metrics launch__registers_per_thread,gpu__time_duration.sum,launch__occupancy_limit_registers \
    -k regex:linear_exact_mma_q4_g64_plain_t8 -c 1 $N bench kernels --filter "linear_exact_mma q4_g64" > $O/regs_pf.txt 2>&1
  t regs
fi
if want 27b; then
  B="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --decode-tokens 64 --no-profile --lanes 8"
  echo "\$ NINFER_TEMPLATES=t_pf ninfer $B" > $O/bench_27b.txt
  NINFER_TEMPLATES=/tmp/t_pf timeout $(left 200) $N $B --json $O/bench_27b_pf.jsonl >> $O/bench_27b.txt 2>&1; echo "rc=$?" >> $O/bench_27b.txt
  t 27b
fi
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $FINAL/v15.tgz -C /tmp v15-out
echo "===== summary"
cat $O/context.txt
grep -E "checks:|rc=" $O/qualify_pf.txt | cut -c1-160
python3 -c "
import json,glob,collections
d=collections.defaultdict(dict)
for f in sorted(glob.glob('$O/bench_kernels_*.jsonl')):
    v=f.rsplit('_',1)[1].split('.')[0]; i=f.split('_')[-2]
    for l in open(f):
        r=json.loads(l)
        if 'mma' in r['route'] and ('step' in r['what'] or 'T=8 ' in r['shape'] or 'T=1 ' in r['shape'] or 'T=32 ' in r['shape']):
            d[(r['what'][:22], r['shape'])][i+v]=round(r['median_us'],2)
for k,v in d.items(): print(k, v)
"
grep -E "registers|duration|limit" $O/regs_pf.txt | head -4
grep -E "^decode  |^what|rc=" $O/bench_27b.txt | cut -c1-150
t done
