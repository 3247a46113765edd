#!/usr/bin/env bash
# gemv_ring v10 job: (1) Nsight Compute on one launch of the default q4_g64 T=1 ring kernel
# at 17408x5120 (sections + PM sampling), per template set; (2) bench kernels at the 27B's
# T = 1 shapes per template set (copy and cuBLAS in the same run); (3) optionally qualify
# and the synthetic 27B decode. Template sets ride beside the binary as .gpu/ringfix/t_<name>
# (NINFER_TEMPLATES); kernels are built on the device in parallel first. Each step's timeout
# is cut to what is left of LIMIT seconds. Usage (repo root): VARIANTS="base pf2" bash .gpu/ringfix/job.sh
set -u
T0=$(date +%s); LIMIT=${LIMIT:-200}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
G=.gpu/ringfix
B=/tmp/rf-ninfer
xz -dc $G/ninfer.xz > $B && chmod +x $B
REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/rf-cache
OUT="${OUT:-gpu-out}"; mkdir -p "$OUT"
R="$OUT"; OUT=/tmp/rf-out; rm -rf $OUT; mkdir -p $OUT  # at most 8 files come back: all.tgz and summary.txt
{ echo "revision: $REV"; echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)";
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $OUT/context.txt
VARIANTS="${VARIANTS:-base pf2}"
NCU_V="${NCU_V:-$VARIANTS}"
QV="${QV:-}"          # the variant to qualify (none by default)
MV="${MV:-}"          # the variants to run the 27B decode with
F="${F:-linear_exact q4_g64 x20 T=1 N=17408 K=5120|linear_exact q4_g64 x20 T=1 N=5120 K=17408|linear_exact q4_g64 x20 T=1 N=4096 K=14336|linear_exact q4_g64 x20 T=1 N=10240 K=5120|linear_exact q4_g64 x20 T=1 N=5120 K=6144|linear_exact q4_g64 x20 T=1 N=248320 K=5120|linear_exact q8_g32 x20 T=1 N=17408 K=5120}"
KF="${KF:-plain_t1_r}"
tdir() { echo "$PWD/$G/t_$1"; }
# Kernels: the T = 1 linear_exact instantiations of each template set, 16 cores.
for v in $VARIANTS; do
  NINFER_TEMPLATES=$(tdir $v) timeout $(left 60) $B kernels build linear_exact --arch sm_90 --filter "$KF" > $OUT/build_$v.txt 2>&1
  echo "build $v rc=$? t=$(($(date +%s)-T0))" | tee -a $OUT/build_$v.txt
done
# Nsight Compute: one launch (the 11th) of the default split, isolated (ncu serialises).
NCU="ncu --clock-control none -k regex:ring_q4_g64.*_t1_r8_w16_s2 --launch-skip 10 --launch-count 1"
ncu --list-sections > $OUT/ncu_sections.txt 2>&1
for v in $NCU_V; do
  NINFER_TEMPLATES=$(tdir $v) timeout $(left 40) $NCU --section SpeedOfLight --section LaunchStats --section Occupancy \
    --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --export $OUT/ncu_$v -f \
    $B bench kernels --filter "linear_exact q4_g64 x20 T=1 N=17408 K=5120" > $OUT/ncu_$v.log 2>&1
  echo "ncu $v rc=$? t=$(($(date +%s)-T0))" >> $OUT/ncu_$v.log
  NINFER_TEMPLATES=$(tdir $v) timeout $(left 40) $NCU --section PmSampling $(grep -q PmSampling_WarpStates $OUT/ncu_sections.txt && echo --section PmSampling_WarpStates) --export $OUT/pm_$v -f \
    $B bench kernels --filter "linear_exact q4_g64 x20 T=1 N=17408 K=5120" > $OUT/pm_$v.log 2>&1
  echo "pm $v rc=$? t=$(($(date +%s)-T0))" >> $OUT/pm_$v.log
  for r in ncu pm; do
    [ -f $OUT/${r}_$v.ncu-rep ] || continue
    timeout $(left 15) ncu --import $OUT/${r}_$v.ncu-rep --csv --page details > $OUT/${r}_${v}_details.csv 2>&1
    timeout $(left 15) ncu --import $OUT/${r}_$v.ncu-rep --csv --page raw --print-metric-instances values > $OUT/${r}_${v}_raw.csv 2>&1
  done
done
# Bench: every template set, the same shapes.
for v in $VARIANTS; do
  echo "\$ NINFER_TEMPLATES=t_$v ninfer bench kernels --filter '$F'" > $OUT/bench_$v.txt
  NINFER_TEMPLATES=$(tdir $v) timeout $(left 90) $B bench kernels --filter "$F" --json $OUT/bench_$v.jsonl --rev "$REV" >> $OUT/bench_$v.txt 2>&1
  echo "bench $v rc=$? t=$(($(date +%s)-T0))" >> $OUT/bench_$v.txt
done
for v in $QV; do
  echo "\$ NINFER_TEMPLATES=t_$v ninfer qualify --filter linear_exact_ring" > $OUT/qualify_$v.txt
  NINFER_TEMPLATES=$(tdir $v) timeout $(left 120) $B qualify --filter linear_exact_ring --json $OUT/qualify_$v.jsonl >> $OUT/qualify_$v.txt 2>&1
  echo "qualify $v rc=$? t=$(($(date +%s)-T0))" >> $OUT/qualify_$v.txt
done
for v in $MV; do
  [ $(left 999) -lt ${MMIN:-100} ] && { echo "model $v skipped: $(left 999) s left" > $OUT/model_$v.txt; continue; }
  echo "\$ NINFER_TEMPLATES=t_$v ninfer bench model --synthetic qwen3.6-27b --weights q4_g64 --lanes 1 --decode-tokens 64" > $OUT/model_$v.txt
  NINFER_TEMPLATES=$(tdir $v) timeout $(left 150) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --lanes 1 --decode-tokens 64 --json $OUT/model_$v.jsonl --rev "$REV" >> $OUT/model_$v.txt 2>&1
  echo "model $v rc=$? t=$(($(date +%s)-T0))" >> $OUT/model_$v.txt
done
python3 $G/summarize.py $(for v in $VARIANTS; do echo $OUT/bench_$v.jsonl; done) > $OUT/summary.txt 2>&1
cd $OUT && tar czf $R/all.tgz *.txt *.jsonl *.csv *.log *.ncu-rep 2>/dev/null; cd - >/dev/null; cp $OUT/summary.txt $R/
echo "=== summary t=$(($(date +%s)-T0))"
cat $OUT/context.txt; grep -h "rc=" $OUT/*.txt $OUT/*.log | cut -c1-150
cat $OUT/summary.txt
grep -hE "checks|FAIL|max rel" $OUT/qualify_*.txt 2>/dev/null | head -8
grep -hiE "decode|floor|error|panick" $OUT/model_*.txt 2>/dev/null | head -8
