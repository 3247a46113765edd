#!/usr/bin/env bash
# bench/gdn run 49 (device job, carry [".gpu/r49"]; ~2 min): the split update's L2
# prefetch of the state slab `ahead` blocks on, before its PDL wait
# (`NINFER_GDN_PREFETCH` = percent of the blocks that fit at once; unset: none). The decode
# qualify with the prefetch on, then the decode bench without it and at 100 %, twice,
# then at 50 and 200 % while the limit lasts, in one call. Outputs: $OUT/r49.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-150}
source scripts/gpu/job-lib.sh
job_init r49 "(the split update's L2 prefetch, NINFER_GDN_PREFETCH)"
G=$(job_example r49 gdn_gpu)
NINFER_GDN_PREFETCH=100 timeout -k 5 $(left 90) $G --decode-only --skip-bench \
    --qualify-json $O/qualify_decode.jsonl > $O/qualify_decode.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_decode.txt
t "qualify decode (prefetch 100)"
for run in off:0 p100:100 off2:0 p100b:100 p50:50 p200:200; do
  name=${run%%:*}; pct=${run##*:}
  NINFER_GDN_PREFETCH=$pct timeout -k 5 $(left 60) $G --decode-only --skip-qualify \
      --rev "$NINFER_REV+r49 prefetch $pct" --json $O/bench_$name.jsonl > $O/bench_$name.txt 2>&1
  echo "bench rc=$?" >> $O/bench_$name.txt
  t "bench $name"
done
tar czf $OUT/r49.tgz -C /tmp r49-out
{
echo "===== summary"
cat $O/context.txt
echo "decode: $(grep -E '^qualify \(seed' $O/qualify_decode.txt) $(tail -1 $O/qualify_decode.txt)"
grep FAIL $O/qualify_decode.txt | head -5
for name in off p100 off2 p100b p50 p200; do
  echo "-- $name: $(grep -E '^copy' $O/bench_$name.txt)"
  job_gdn_table $O/bench_$name.jsonl
done
t done
} | tee $OUT/summary.txt
