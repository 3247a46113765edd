#!/usr/bin/env bash
# bench/gdn run 42 (device job, carry [".gpu/r42"]; ~2 min): the joined decode step's
# second form. Decode qualify with set a, then the decode bench a / b / a / b (one process
# each; split and joined routes side by side in each). Outputs: $OUT/r42.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-400}
source scripts/gpu/job-lib.sh
job_init r42 "(the joined decode step, second form)"
G=$(job_example r42 gdn_gpu)
NINFER_TEMPLATES=$PWD/.gpu/r42/a/templates timeout -k 5 $(left 120) $G --decode-only --skip-bench \
    --qualify-json $O/qualify_a.jsonl > $O/qualify_a.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_a.txt
t "qualify a"
NINFER_TEMPLATES=$PWD/.gpu/r42/b/templates timeout -k 5 $(left 120) $G --decode-only --skip-bench \
    --qualify-json $O/qualify_b.jsonl > $O/qualify_b.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_b.txt
t "qualify b"
i=0
for v in a b a b; do
  i=$((i + 1))
  NINFER_TEMPLATES=$PWD/.gpu/r42/$v/templates timeout -k 5 $(left 60) $G --decode-only --skip-qualify \
      --rev "$NINFER_REV+r42-$v" --json $O/bench_${i}_$v.jsonl > $O/bench_${i}_$v.txt 2>&1
  echo "bench rc=$?" >> $O/bench_${i}_$v.txt
  t "bench $i $v"
done
tar czf $OUT/r42.tgz -C /tmp r42-out
{
echo "===== summary"
cat $O/context.txt
for v in a b; do
  echo "$v: $(grep -E '^qualify \(seed' $O/qualify_$v.txt) $(tail -1 $O/qualify_$v.txt)"; grep FAIL $O/qualify_$v.txt | head -5
done
i=0
for v in a b a b; do
  i=$((i + 1))
  echo "-- bench $i $v: $(grep -E '^copy' $O/bench_${i}_$v.txt)"
  python3 - $O/bench_${i}_$v.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    s, ro = r["shape"], r["route"]
    if "lanes=8" in s and "vx" in ro:
        print(f"{s[-9:]:9} {ro[:44]:44} {r['median_us']:8.2f} {r.get('fraction') or 0:5.2f}")
PY
done
t done
} | tee $OUT/summary.txt
