#!/usr/bin/env bash
# v80: a timeline of v77's kernel in a chain of launches. `bench kernels` on linear_tc under
# the trace probe (bit 8, results unchanged), variants NAME:BLOCKS:SLOTS:PROBE as v78's
# (tiles 8): T as built (1 block an SM, 6 stages at T = 1), Tr its ring alone (probe
# 8 + 2), T2 two blocks an SM with two stages (v78's C: did the next launch's blocks
# start beside the running ones?); then v80/timeline.py on each trace.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-200}
source scripts/gpu/job-lib.sh
job_init v80 "(gemv_tc v77 kernel, trace probe)"
for v in T:1:12:8 Tr:1:12:10 T2:2:2:8; do
  IFS=: read -r name blocks slots probe <<< "$v"
  NINFER_TC_TRACE=$O/trace_$name.jsonl NINFER_TC_BLOCKS=$blocks NINFER_TC_SLOTS=$slots NINFER_TC_PROBE=$probe \
    timeout $(left 50) $B bench kernels --filter "linear_tc q4_g64 x20" --json $O/$name.jsonl > $O/$name.txt 2>&1
  echo "rc=$?" >> $O/$name.txt
  t "variant $v"
done
grep -E "copy|T=1 N=17408|T=8 N=17408|N=248320" $O/T.txt | head
python3 bench/kernels/v80/timeline.py $O/trace_T.jsonl $O/trace_Tr.jsonl $O/trace_T2.jsonl | tee $O/timeline.txt
gzip $O/trace_*.jsonl
mkdir -p "$OUT" && tar czf "$OUT/v80-run1.tgz" -C $O .
