#!/usr/bin/env bash
# bench/gdn run 36 (device job, carry [".gpu/r34", ".gpu/r36"]; ~2 min): is the wgmma scan at
# 4096 tokens waiting on its next chunk's copies? v2u (run 34's template, whose copies go
# out first thing in a chunk, with the update as four wgmmas: v2u-on-v2.patch) and v3uf
# (run 35's v3u with W S and Q S issued after the barrier and the copies:
# v3uf-on-v3u.patch), as template sets through run 34's build. Each: the prefill qualify,
# then the stages alone, main (run 34's template) / v2u / v3uf, twice. Outputs:
# $OUT/r36.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-500}
source scripts/gpu/job-lib.sh
job_init r34 "(run 34's build; run 36's template sets)"
G=$(job_example r34 gdn_gpu)
VARS="v2u v3uf"
for v in $VARS; do
  NINFER_TEMPLATES=$PWD/.gpu/r36/$v/templates timeout $(left 100) $G --prefill-only --skip-bench \
      --qualify-json $O/qualify_$v.jsonl > $O/qualify_$v.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify_$v.txt
  t "qualify $v"
done
i=0
for v in main $VARS main $VARS; do
  i=$((i + 1))
  TPL=""; [ $v = main ] || TPL=NINFER_TEMPLATES=$PWD/.gpu/r36/$v/templates
  env $TPL timeout $(left 60) $G --prefill-only --skip-qualify --rev "$NINFER_REV+$v" \
      --json $O/bench_${i}_$v.jsonl > $O/bench_${i}_$v.txt 2>&1
  echo "bench rc=$?" >> $O/bench_${i}_$v.txt
  t "bench $v"
done
tar czf $OUT/r36.tgz -C /tmp r34-out
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
