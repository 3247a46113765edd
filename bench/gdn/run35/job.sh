#!/usr/bin/env bash
# bench/gdn run 35 (device job, carry [".gpu/r34", ".gpu/r35"]; ~2 min): the wgmma scan's
# chunk reordered (v3.patch on run 34's template: P's wgmma runs over the loop's turn, its o
# staged at the next chunk's top and stored after its one barrier; W S and Q S issued
# before that barrier; the gates read where they are used) and v3w (v3 waiting for W S
# and Q S together, so that S^T's f16 copy is dead during the update) and v3u (v3 with the
# update as four wgmmas, K N-major), as template sets
# through run 34's build. Each: the prefill qualify, then the stages alone, main (run
# 34's template) / v3 / v3w / main / v3 / v3w. Outputs: $OUT/r35.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-500}
source scripts/gpu/job-lib.sh
job_init r34 "(run 34's build; run 35's template sets)"
G=$(job_example r34 gdn_gpu)
VARS="v3 v3w v3u"
for v in $VARS; do
  NINFER_TEMPLATES=$PWD/.gpu/r35/$v/templates timeout $(left 100) $G --prefill-only --skip-bench \
      --qualify-json $O/qualify_$v.jsonl > $O/qualify_$v.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify_$v.txt
  t "qualify $v"
done
i=0
for v in main $VARS main $VARS; do
  i=$((i + 1))
  TPL=""; [ $v = main ] || TPL=NINFER_TEMPLATES=$PWD/.gpu/r35/$v/templates
  env $TPL timeout $(left 60) $G --prefill-only --skip-qualify --rev "$NINFER_REV+$v" \
      --json $O/bench_${i}_$v.jsonl > $O/bench_${i}_$v.txt 2>&1
  echo "bench rc=$?" >> $O/bench_${i}_$v.txt
  t "bench $v"
done
tar czf $OUT/r35.tgz -C /tmp r34-out
{
echo "===== summary"
cat $O/context.txt
for v in $VARS; do echo "$v: $(grep -E '^qualify \(seed' $O/qualify_$v.txt) $(tail -1 $O/qualify_$v.txt)"; grep FAIL $O/qualify_$v.txt | head -5; done
i=0
for v in main $VARS main $VARS; do
  i=$((i + 1))
  echo "-- $v: $(grep -E 'T=(512|4096).*(chunk_scan_wg|chunk_scan_f16_v64 )' $O/bench_${i}_$v.txt | awk '{print $(NF-6), $(NF-5)}' | tr '\n' ' ')"
  grep -E "T=4096 .*state=f32 .*qkvh" $O/bench_${i}_$v.txt | awk '{print "   route", $(NF-6), $(NF-5)}' | tail -1
done
t done
} | tee $OUT/summary.txt
