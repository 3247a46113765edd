#!/usr/bin/env bash
# bench/gdn run 28 (device job, carry [".gpu/r28"]; ~3 min): the prefill prologue's tokens
# a warp (NINFER_PREP_TPW, tpw-env.patch; main takes 4): the prefill qualify with 8 and 16
# (every route, T = 1 to 4096), the prefill bench with 4 / 8 / 16 / 4 / 16 (one process
# each), compare on the GDN fixtures with 16. Outputs: $OUT/r28.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-400}
source scripts/gpu/job-lib.sh
job_init r28 "(r28: main with tpw-env.patch)"
G=$(job_example r28 gdn_gpu)
P=bench/gdn/run3
for n in 8 16; do
  NINFER_PREP_TPW=$n timeout $(left 60) $G --prefill-only --skip-bench --qualify-json $O/qualify_t$n.jsonl > $O/qualify_t$n.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify_t$n.txt
  t "qualify tpw $n"
done
bench() {   # bench NAME TPW
  NINFER_PREP_TPW=$2 timeout $(left 60) $G --prefill-only --skip-qualify --rev "$NINFER_REV+tpw$2" \
      --peer $P/peer.jsonl --peer-called $P/peer_called.jsonl --json $O/bench_$1.jsonl > $O/bench_$1.txt 2>&1
  echo "bench rc=$?" >> $O/bench_$1.txt
  t "bench $1"
}
bench t4 4; bench t8 8; bench t16 16; bench t4b 4; bench t16b 16
NINFER_PREP_TPW=16 job_compare_gdn
t "compare"
tar czf $OUT/r28.tgz -C /tmp r28-out
{
echo "===== summary"
cat $O/context.txt
for n in 8 16; do echo "tpw $n: $(grep -E '^qualify \(seed' $O/qualify_t$n.txt) $(tail -1 $O/qualify_t$n.txt)"; done
grep -hE "vs cpu|FAILED" $O/compare.txt | awk '{print substr($0, 1, 60) " ... " substr($0, length($0) - 60)}'
echo "columns: tpw 4, 8, 16, 4, 16"
python3 bench/gdn/run16/table.py $O/qualify_t16.jsonl $O/bench_t4.jsonl $O/bench_t8.jsonl $O/bench_t16.jsonl $O/bench_t4b.jsonl $O/bench_t16b.jsonl | grep -E "^T |f16|wu_f16|scan_f16|prep" | grep -vE "tf32|prep\+wu_[t3d]|_v3 |v32 " | cut -c1-200
t done
} | tee $OUT/summary.txt
