#!/usr/bin/env bash
# v83: the ring's depth swept on v82's build (carry [".gpu/v82"]; no new patch): stages of
# 8 tiles capped at 4 and 5 (v82: 4 took T = 1 17408x5120 from 16.87 to 15.79 us), of 12
# tiles at 2 and 3, of 4 tiles at 6 and 8 (the bytes of 3 and 4 of 8), beside v77's 6 of
# 8; NAME:TILES:SLOTS, timed twice, alternated. qualify at 12 tiles with 3 stages first.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
source scripts/gpu/job-lib.sh
job_init v82 "(gemv_tc, ring depth sweep: v83)"
NINFER_TC_TILES=12 NINFER_TC_SLOTS=3 timeout $(left 60) $B qualify --filter linear_tc --json $O/qualify_t12s3.jsonl > $O/qualify_t12s3.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_t12s3.txt
NINFER_TC_TILES=8 NINFER_TC_SLOTS=4 timeout $(left 60) $B qualify --filter linear_tc --json $O/qualify_t8s4.jsonl > $O/qualify_t8s4.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_t8s4.txt
t "qualify linear_tc (12 tiles 3 stages; 8 tiles 4 stages)"
grep -E "FAIL|checks|failed|rc=|error" $O/qualify_t*.txt | head -8
VARIANTS="A6:8:12 E4:8:4 E5:8:5 F2:12:2 F3:12:3 G6:4:6 G8:4:8"
for pass in a b; do
  for v in $VARIANTS; do
    IFS=: read -r name tiles slots <<< "$v"
    NINFER_TC_TILES=$tiles NINFER_TC_SLOTS=$slots \
      timeout $(left 25) $B bench kernels --filter "linear_tc q4_g64 x20" --json $O/$name$pass.jsonl > $O/$name$pass.txt 2>&1
    echo "rc=$?" >> $O/$name$pass.txt
    t "variant $v ($pass)"
  done
done
grep copy $O/A6a.txt
python3 bench/kernels/v81/table.py $O $VARIANTS --passes ab
mkdir -p "$OUT" && tar czf "$OUT/v83-run1.tgz" -C $O .
