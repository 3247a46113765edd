#!/usr/bin/env bash
# bench/gdn run 33 (device job, carry [".gpu/r33b", ".gpu/r33"]; ~3 min): where the wgmma
# scan's chunk goes. Template sets beside main's (.gpu/r33/VAR/templates, made from HEAD's
# with bench/gdn/run33/VAR.patch) through run 33's build: ablations that drop one part of a
# chunk (nocopy: the next chunks' copies; noupd: the update's products; nostore: o's
# stores; nopv: P's wgmma; their results are wrong, they are timed only) and `late` (the
# copies issued after the W S and Q S wgmmas; qualified). Each: the prefill bench's stages
# alone (both stage counts). Outputs: $OUT/r33.tgz, summary.txt (also printed last).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-500}
source scripts/gpu/job-lib.sh
job_init r33b "(the wgmma scan, ablations)"
G=$(job_example r33b gdn_gpu)
P=bench/gdn/run3
VARS=${VARS:-main nocopy noupd nostore nopv late main}
QVARS=${QVARS:-late}
for v in $QVARS; do
  NINFER_TEMPLATES=$PWD/.gpu/r33/$v/templates timeout $(left 120) $G --prefill-only --skip-bench \
      --qualify-json $O/qualify_$v.jsonl > $O/qualify_$v.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify_$v.txt
  t "qualify $v"
done
i=0
for v in $VARS; do
  i=$((i + 1))
  NINFER_TEMPLATES=$PWD/.gpu/r33/$v/templates timeout $(left 60) $G --prefill-only --skip-qualify \
      --rev "$NINFER_REV+$v" --json $O/bench_${i}_$v.jsonl > $O/bench_${i}_$v.txt 2>&1
  echo "bench rc=$?" >> $O/bench_${i}_$v.txt
  t "bench $v"
done
tar czf $OUT/r33.tgz -C /tmp r33b-out
{
echo "===== summary"
cat $O/context.txt
for v in $QVARS; do echo "$v: $(grep -E '^qualify \(seed' $O/qualify_$v.txt) $(tail -1 $O/qualify_$v.txt)"; done
i=0
for v in $VARS; do
  i=$((i + 1))
  echo "-- $v: $(grep -E 'T=4096.*(chunk_scan_wg|chunk_scan_f16_v64 )' $O/bench_${i}_$v.txt | awk '{print $(NF-6), $(NF-5)}' | tr '\n' ' ')"
done
t done
} | tee $OUT/summary.txt
