#!/usr/bin/env bash
# bench/gdn run 43 (device job, carry [".gpu/r43"]; ~2 min): the wgmma scan with the chunk
# over two warpgroups (gdn/chunk_wgs.cu), template sets a (two V'^T buffers) and b (one).
# The prefill qualify of each set (every route, the new one included), then the prefill
# bench a / b / a / b (the routes and each stage alone, the one- and two-warpgroup scans
# side by side). fla: run 41's figures on the same GPU kind (not re-run here).
# SETS and ORDER (environment) narrow it, e.g. SETS=a ORDER="a a". Outputs: $OUT/r43.tgz,
# summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-400}
source scripts/gpu/job-lib.sh
job_init r43 "(the two-warpgroup wgmma scan)"
G=$(job_example r43 gdn_gpu)
SETS=${SETS:-a b}
ORDER=${ORDER:-a b a b}
for v in $SETS; do
  NINFER_TEMPLATES=$PWD/.gpu/r43/$v/templates timeout -k 5 $(left 100) $G --prefill-only --skip-bench \
      --qualify-json $O/qualify_$v.jsonl > $O/qualify_$v.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify_$v.txt
  t "qualify $v"
done
i=0
for v in $ORDER; do
  i=$((i + 1))
  NINFER_TEMPLATES=$PWD/.gpu/r43/$v/templates timeout -k 5 $(left 60) $G --prefill-only --skip-qualify \
      --rev "$NINFER_REV+r43-$v" --json $O/bench_${i}_$v.jsonl > $O/bench_${i}_$v.txt 2>&1
  echo "bench rc=$?" >> $O/bench_${i}_$v.txt
  t "bench $i $v"
done
tar czf $OUT/r43.tgz -C /tmp r43-out
{
echo "===== summary"
cat $O/context.txt
for v in $SETS; do
  echo "qualify $v: $(grep -E '^qualify \(seed' $O/qualify_$v.txt) $(tail -1 $O/qualify_$v.txt)"; grep FAIL $O/qualify_$v.txt | head -8
done
i=0
for v in $ORDER; do
  i=$((i + 1))
  echo "-- bench $i $v: $(grep -E '^copy' $O/bench_${i}_$v.txt)"
  python3 - $O/bench_${i}_$v.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    ro = r["route"]
    if "wg" in ro or ro.startswith("chunk_wu_f16") or ro == "prep_qkvh":
        print(f"{r['what'][:18]:18} {r['shape'][:7]:7} {r['shape'][-9:]:9} {ro[-44:]:44} {r['median_us']:9.2f}")
PY
done
t done
} | tee $OUT/summary.txt
