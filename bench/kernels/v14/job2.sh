#!/usr/bin/env bash
# v14 job 2: the mma GEMV with split K (block = m-range x K-range, one staged slab, passes
# of up to one m-tile a warp, one wave; linear/splitk_sum.cu adds the K-ranges) and the
# SwiGLU staging's fast silu, against NINFER_MMA_SPLIT_K=0 (one K-range: the old grid, with
# this change's pass loop and silu) in the same run. Steps (timeouts cut to LIMIT):
#   qualify  ninfer qualify --filter linear_exact_mma (every mma route, both formats)
#   kernels  bench kernels 'linear_exact_mma q4_g64', split K on, off, on
#   27b      bench model synthetic 27B q4_g64, --no-profile: lanes 1,8 (split on), then
#            lanes 8 with NINFER_MMA_SPLIT_K=0
#   tune     scripts/gpu/tune.sh for this template set (run1.toml: the profile to install)
# Needs (carried): .gpu/v14b/{ninfer.xz,REV,kc.tgz}. Output: $OUT/v14_2.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-560}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
STEPS="${STEPS:-qualify kernels 27b tune}"
want() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
G=.gpu/v14b
N=/tmp/v14b-ninfer
xz -dc $G/ninfer.xz > $N && chmod +x $N
mkdir -p .gpu && cp $N .gpu/ninfer && cp $G/REV .gpu/REV
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/v14b-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf $G/kc.tgz -C $NINFER_CACHE_DIR
FINAL=$OUT; O=/tmp/v14b-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
( sleep $((LIMIT - 8)); tar czf $FINAL/partial.tgz -C /tmp v14b-out ) > /dev/null 2>&1 &
PARTIAL=$!
if want qualify; then
  timeout $(left 120) $N qualify --filter linear_exact_mma --json $O/qualify.jsonl > $O/qualify.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify.txt
  t qualify
fi
if want kernels; then
  i=0
  for v in 1 0 1; do
    i=$((i + 1))
    echo "\$ NINFER_MMA_SPLIT_K=$v ninfer bench kernels --filter 'linear_exact_mma q4_g64'" >> $O/bench_kernels.txt
    NINFER_MMA_SPLIT_K=$v NINFER_REV="$NINFER_REV+split$v" timeout $(left 60) $N bench kernels --filter "linear_exact_mma q4_g64" \
      --json $O/bench_kernels_${i}_split$v.jsonl >> $O/bench_kernels.txt 2>&1
    echo "rc=$?" >> $O/bench_kernels.txt
  done
  t kernels
fi
if want 27b; then
  B="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --decode-tokens 64 --no-profile"
  echo "\$ ninfer $B --lanes 1,8" > $O/bench_27b.txt
  timeout $(left 200) $N $B --lanes 1,8 --json $O/bench_27b_split1.jsonl >> $O/bench_27b.txt 2>&1; echo "rc=$?" >> $O/bench_27b.txt
  t "27b split on"
  echo "\$ NINFER_MMA_SPLIT_K=0 ninfer $B --lanes 8" >> $O/bench_27b.txt
  NINFER_MMA_SPLIT_K=0 timeout $(left 200) $N $B --lanes 8 --json $O/bench_27b_split0.jsonl >> $O/bench_27b.txt 2>&1; echo "rc=$?" >> $O/bench_27b.txt
  t "27b split off"
fi
if want tune; then
  OUT=$O/tune timeout $(left 150) bash scripts/gpu/tune.sh > $O/tune_job.txt 2>&1; echo "tune rc $?" >> $O/tune_job.txt
  t tune
fi
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $FINAL/v14_2.tgz -C /tmp v14b-out
echo "===== summary"
cat $O/context.txt
grep -E "^linear_exact|passed|failed|rc=" $O/qualify.txt | tail -n 6 | cut -c1-160
grep -E "T=(1|8) N=(17408|5120) |rc=" $O/bench_kernels.txt | cut -c1-160
grep -E "^decode  |^what|rc=" $O/bench_27b.txt | cut -c1-150
cat $O/tune/phases.txt 2>/dev/null | tail -n 3; head -3 $O/tune/check.txt 2>/dev/null | cut -c1-160
t done
