#!/usr/bin/env bash
# bench/gdn run 24 (device job, carry [".gpu/r24", ".gpu/r23"]; ~2 min): U as f16 on the f16
# route (r24) against main (r23) on whichever GPU the call gets: the prefill qualify of r24
# (every route, T = 1 to 4096, both state types, on a NaN-filled workspace), the prefill
# bench r24 / r23 / r24 / r23 (one process each; fla's figures from run 3, H200), compare on
# the GDN fixtures and the bf16 qwen3.6-mini at 1 and 8 lanes with r24. Outputs: $OUT/r24.tgz,
# compare.txt, summary.txt (also printed last).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
source scripts/gpu/job-lib.sh
job_init r23 "(r23: main)"
G0=$(job_example r23 gdn_gpu)
job_init r24 "(r24: main with u-f16.patch)"
G=$(job_example r24 gdn_gpu)
P=bench/gdn/run3
timeout $(left 60) $G --prefill-only --skip-bench --qualify-json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t "qualify"
bench() {
  timeout $(left 60) $1 --prefill-only --skip-qualify --rev "$NINFER_REV" --peer $P/peer.jsonl \
      --peer-called $P/peer_called.jsonl --json $O/bench_$2.jsonl > $O/bench_$2.txt 2>&1
  echo "bench rc=$?" >> $O/bench_$2.txt
  t "bench $2"
}
bench $G a
job_use r23; bench $G0 base
job_use r24; bench $G b
job_use r23; bench $G0 base2
job_use r24
job_compare_gdn mini
t "compare"
tar czf $OUT/r24.tgz -C /tmp r24-out
cp $O/compare.txt $OUT/
{
echo "===== summary"
cat $O/context.txt
grep -E '^qualify \(seed' $O/qualify.txt; tail -1 $O/qualify.txt
grep -hE "vs cpu|FAILED" $O/compare.txt | awk '{print substr($0, 1, 60) " ... " substr($0, length($0) - 60)}'
python3 bench/gdn/run16/table.py $O/qualify.jsonl $O/bench_a.jsonl $O/bench_base.jsonl $O/bench_b.jsonl $O/bench_base2.jsonl | grep -E "^T |f16|wu_f16|scan_f16|prep" | grep -vE "tf32|prep\+wu_[t3d]" | cut -c1-150
t done
} | tee $OUT/summary.txt
