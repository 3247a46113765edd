#!/usr/bin/env bash
# v82: does a shallower ring at entry bring the first stage sooner? (v80/v81: a block's
# first stage lands 4-6 us after its entry, whatever the PDL wait.) qualify linear_tc at
# 10 tiles a chunk (v81's refused launch), then `bench kernels` on linear_tc,
# NAME:TILES:SLOTS:PROBE (slots: the ring's depth at most; probe 8: the trace), then
# v80/timeline.py on the traces.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
source scripts/gpu/job-lib.sh
job_init v82 "(gemv_tc, ring depth at entry)"
NINFER_TC_TILES=10 timeout $(left 60) $B qualify --filter linear_tc --json $O/qualify_t10.jsonl > $O/qualify_t10.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_t10.txt
t "qualify linear_tc, 10 tiles a chunk"
grep -E "FAIL|checks|failed|rc=|error" $O/qualify_t10.txt | head -8
VARIANTS="A6:8:12:0 S3:8:3:0 S4:8:4:0 W3:10:3:0 A6b:8:12:0 S3b:8:3:0 S4b:8:4:0 W3b:10:3:0 A6t:8:12:8 S3t:8:3:8 S4t:8:4:8 W3t:10:3:8"
for v in $VARIANTS; do
  IFS=: read -r name tiles slots probe <<< "$v"
  NINFER_TC_TRACE=$O/trace_$name.jsonl NINFER_TC_TILES=$tiles NINFER_TC_SLOTS=$slots NINFER_TC_PROBE=$probe \
    timeout $(left 30) $B bench kernels --filter "linear_tc q4_g64 x20" --json $O/$name.jsonl > $O/$name.txt 2>&1
  echo "rc=$?" >> $O/$name.txt
  t "variant $v"
done
grep copy $O/A6.txt
python3 bench/kernels/v81/table.py $O $VARIANTS
python3 bench/kernels/v80/timeline.py $O/trace_A6t.jsonl $O/trace_S3t.jsonl $O/trace_S4t.jsonl $O/trace_W3t.jsonl | tee $O/timeline.txt
for f in $O/trace_*.jsonl; do case $f in *t.jsonl) gzip $f;; *) rm -f $f;; esac; done
mkdir -p "$OUT" && tar czf "$OUT/v82-run1.tgz" -C $O .
