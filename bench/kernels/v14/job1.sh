#!/usr/bin/env bash
# v14 job 1 (2026-11-30): where the T = 8 decode linears and the 8-lane 27B step spend
# their time, measured before any change (issue 4: T = 8 <= 1.25x T = 1; issue 8: 8 lanes
# >= 5x one lane, now 2.0x). Steps, most wanted first, each timeout cut to what is left of
# LIMIT seconds:
#   mma     ncu's full section set on the exact mma GEMV at T = 8 (q4_g64, 17408x5120, the
#           first T = 8 launch of `bench kernels 'linear_exact_mma q4_g64'`): speed of
#           light, warp stalls, shared-memory and L2 traffic
#   lanes   ncu kernel durations (graph nodes) over a synthetic 27B q4_g64 run at 8 lanes:
#           16-token prompts, 2 warm-up steps, 1 timed replay; summarised here with
#           bench/engine/step/summarize.py
#   attn    bench/kernels/attn-v3/job.sh (the 27B attention decode at context 4096)
#   part    copies .gpu/part.* (a part of the default model) to /root/models for job 2
# Needs (carried): .gpu/v14/{ninfer.xz,REV,kc.tgz} and .gpu/part.aa; attn (not in the
# default STEPS) copies the binary to .gpu/attn3 for attn-v3/job.sh.
# Output: $OUT/v14_1.tgz, attn3.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-560}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
STEPS="${STEPS:-part mma lanes}"
want() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
G=.gpu/v14
N=/tmp/v14-ninfer
xz -dc $G/ninfer.xz > $N && chmod +x $N
export NINFER_REV="$(cat $G/REV)"; cp $G/REV /tmp/v14-REV
export NINFER_CACHE_DIR=/tmp/v14-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf $G/kc.tgz -C $NINFER_CACHE_DIR
O=/tmp/v14-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
if want part; then
  mkdir -p /root/models && cp .gpu/part.* /root/models/ 2>/dev/null; ls -l /root/models > $O/parts.txt
fi
if want mma; then
  timeout $(left 150) ncu --set full -k regex:linear_exact_mma_q4_g64_none_t8 -c 1 \
    --export $O/mma -f $N bench kernels --filter "linear_exact_mma q4_g64" > $O/mma_ncu.log 2>&1
  echo "ncu rc=$?" >> $O/mma_ncu.log
  [ -f $O/mma.ncu-rep ] && timeout $(left 40) ncu --import $O/mma.ncu-rep --page details --csv > $O/mma_details.csv 2> $O/mma_import.err
  [ -f $O/mma.ncu-rep ] && timeout $(left 40) ncu --import $O/mma.ncu-rep --page source --csv --print-source sass > $O/mma_sass.csv 2>> $O/mma_import.err
  rm -f $O/mma.ncu-rep
  t mma
fi
if want lanes; then
  B="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --no-profile"
  timeout $(left 280) ncu --clock-control none --cache-control none --graph-profiling node \
    --metrics gpu__time_duration.sum --export $O/ncu_l8 -f $N $B --lanes 8 --decode-tokens 1 --warmup-steps 2 > $O/ncu_l8.log 2>&1
  echo "ncu rc=$?" >> $O/ncu_l8.log
  [ -f $O/ncu_l8.ncu-rep ] && timeout $(left 40) ncu --import $O/ncu_l8.ncu-rep --csv --page raw --metrics gpu__time_duration.sum > $O/ncu_l8.csv 2> $O/ncu_l8.import.err
  rm -f $O/ncu_l8.ncu-rep
  t lanes
fi
tar czf $OUT/v14_1.tgz -C /tmp v14-out
if want attn; then
  mkdir -p .gpu/attn3 && cp $G/ninfer.xz $G/REV .gpu/attn3/
  OUT=$OUT timeout $(left 200) bash bench/kernels/attn-v3/job.sh > $O/attn_job.txt 2>&1
  t attn
fi
tar czf $OUT/v14_1.tgz -C /tmp v14-out
echo "===== summary"
cat $O/context.txt; cat $O/parts.txt 2>/dev/null
tail -n 2 $O/mma_ncu.log 2>/dev/null | cut -c1-150
grep -E '"(Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per Thread)"' $O/mma_details.csv 2>/dev/null | cut -d, -f12- | head -8
tail -n 3 $O/ncu_l8.log 2>/dev/null | cut -c1-150; wc -l $O/ncu_l8.csv 2>/dev/null
tail -n 12 $O/attn_job.txt 2>/dev/null | cut -c1-160
