#!/usr/bin/env bash
# v81: chunks of 10 and 12 tiles against v77's 8 (v80: a block of 17 tiles ran a third
# chunk of one tile, 2.9 us after the 16-tile blocks). qualify linear_tc at 10 and 12
# tiles a chunk, then `bench kernels` on linear_tc, NAME:TILES:PROBE alternated (probe 8:
# the trace, results unchanged), then v80/timeline.py on the traces.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
source scripts/gpu/job-lib.sh
job_init v81 "(gemv_tc, chunks of 8, 10, 12 tiles)"
for tl in 10 12; do
  NINFER_TC_TILES=$tl timeout $(left 60) $B qualify --filter linear_tc --json $O/qualify_t$tl.jsonl > $O/qualify_t$tl.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify_t$tl.txt
  t "qualify linear_tc, $tl tiles a chunk"
  grep -E "FAIL|checks|failed|rc=" $O/qualify_t$tl.txt | head -8
done
VARIANTS="A8:8:0 B10:10:0 C12:12:0 A8b:8:0 B10b:10:0 C12b:12:0 A8t:8:8 B10t:10:8 C12t:12:8"
for v in $VARIANTS; do
  IFS=: read -r name tiles probe <<< "$v"
  NINFER_TC_TRACE=$O/trace_$name.jsonl NINFER_TC_TILES=$tiles NINFER_TC_PROBE=$probe \
    timeout $(left 30) $B bench kernels --filter "linear_tc q4_g64 x20" --json $O/$name.jsonl > $O/$name.txt 2>&1
  echo "rc=$?" >> $O/$name.txt
  t "variant $v"
done
grep copy $O/A8.txt
python3 bench/kernels/v81/table.py $O $VARIANTS
ls $O/trace_*t.jsonl > /dev/null 2>&1 && python3 bench/kernels/v80/timeline.py $O/trace_A8t.jsonl $O/trace_B10t.jsonl $O/trace_C12t.jsonl | tee $O/timeline.txt
rm -f $O/trace_A8.jsonl $O/trace_B10.jsonl $O/trace_C12.jsonl $O/trace_*b.jsonl
gzip $O/trace_*.jsonl
mkdir -p "$OUT" && tar czf "$OUT/v81-run1.tgz" -C $O .
