#!/usr/bin/env bash
# v90: the ring GEMV as a chain of same-shape GEMVs in one launch, a grid barrier between
# them and the weight stream running on through it, and as separate launches handing off
# through a counter instead of the grid's completion, against separate launches (PDL).
# carry [".gpu/v90"] (bench/kernels/v90/stage.sh); ~2-4 min on a warm machine:
#   qualify the T = 1 plain ring splits of the patched template (the chain's check is
#   bit-identity with them); then `bench kernels --filter "ring chain"` twice (each form
#   checked bit for bit against one launch on its geometry before it is timed).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
source scripts/gpu/job-lib.sh
job_init v90 "(chain.patch: the ring GEMV as a chain of GEMVs in one launch)"
timeout $(left 150) $B qualify --filter linear_exact_ring_q4_g64_plain_t1_r --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "rc=$?" >> $O/qualify.txt
t "qualify: $(grep -E 'checks' $O/qualify.txt | tail -1)"
for i in 1 2; do
  timeout $(left 200) $B bench kernels --filter "ring chain" --json $O/chain_$i.jsonl > $O/chain_$i.txt 2>&1
  echo "rc=$?" >> $O/chain_$i.txt
  t "chain pass $i: $(tail -1 $O/chain_$i.txt)"
done
python3 bench/kernels/v90/table.py "ring chain" $O/chain_1.jsonl $O/chain_2.jsonl > $O/table.txt 2>&1
tar czf $OUT/v90.tgz -C /tmp v90-out
echo "===== summary"
cat $O/context.txt
grep -hE 'FAIL|checks' $O/qualify.txt | tail -3
grep -h "no chain\|differ\|error" $O/chain_*.txt | head -5
grep -h "copy" $O/chain_1.txt | head -2
cat $O/table.txt
t done
