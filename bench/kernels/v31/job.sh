#!/usr/bin/env bash
# v31 job (measurement): the 27B 1-lane decode step kernel by kernel, with the installed
# profile. ncu times each kernel node of the replayed graph alone (no PDL overlap), so the
# sum against the bench's step time (v30: 5,542-5,546 us) says how much of the step is
# between kernels rather than in them. Then bench/engine/step/summarize.py on the last
# replayed step. Stage: .gpu/v31/{ninfer.xz,kc.txz,kc-ring.txz,REV}. carry [".gpu"].
set -u
G=.gpu/v31
N=/tmp/v31-ninfer
xz -dc $G/ninfer.xz > $N && chmod +x $N
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/v31-cache
mkdir -p $NINFER_CACHE_DIR && for f in $G/kc*.txz; do tar xf $f -C $NINFER_CACHE_DIR; done
O=/tmp/v31-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
B="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --profile tuning/nvidia-h200.toml"
echo "\$ ncu --clock-control none --cache-control none --graph-profiling node --metrics gpu__time_duration.sum ninfer $B --lanes 1 --decode-tokens 1 --warmup-steps 2" > $O/ncu_l1.log
timeout ${NCU_S:-250} ncu --clock-control none --cache-control none --graph-profiling node \
  --metrics gpu__time_duration.sum --export $O/ncu_l1 -f $N $B --lanes 1 --decode-tokens 1 --warmup-steps 2 >> $O/ncu_l1.log 2>&1
echo "ncu rc=$?" >> $O/ncu_l1.log
[ -f $O/ncu_l1.ncu-rep ] && timeout 30 ncu --import $O/ncu_l1.ncu-rep --csv --page raw --metrics gpu__time_duration.sum > $O/ncu_l1.csv 2> $O/ncu_l1.import.err
rm -f $O/ncu_l1.ncu-rep
python3 bench/engine/step/summarize.py $O/ncu_l1.csv --segments > $O/segments.txt 2>&1
last=$(tail -n 1 $O/segments.txt)
python3 bench/engine/step/summarize.py $O/ncu_l1.csv ${last%%,*} $(echo $last | cut -d, -f2) > $O/step_l1_replay.csv 2>&1
gzip -k $O/ncu_l1.csv
tar czf $OUT/v31.tgz -C /tmp v31-out
cat $O/context.txt; tail -n 2 $O/ncu_l1.log | cut -c1-160
tail -n 6 $O/segments.txt
sort -t, -k4 -g -r $O/step_l1_replay.csv 2>/dev/null | head -14
