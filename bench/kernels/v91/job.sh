#!/usr/bin/env bash
# v91: the 27B's one-column MLP (gate_up + RMSNorm + SwiGLU, then down + residual) in one
# launch of the ring kernel, a grid barrier between its phases, against the engine's two
# launches. carry [".gpu/v90", ".gpu/v91"] (bench/kernels/v90/stage.sh, v91/stage.sh);
# ~4-6 min on a warm machine:
#   qualify every ring route of the restructured template (its body is now a phase
#   function: the plain kernels must still pass); the bench of the one launch (checked bit
#   for bit, h and y, against the two launches on its geometry before it is timed) twice;
#   and the existing one-column MLP bench (`ring mlp q4_g64 x20`) with v90's build (main's
#   plain kernels) and this one, alternated: the restructure's cost or gain.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
source scripts/gpu/job-lib.sh
job_init v90 "(main's ring kernels, for the before)"
B90=$B; C90=$NINFER_CACHE_DIR; R90=$NINFER_REV
job_init v91 "(mlp.patch: the ring GEMV as phases, an MLP in one launch)"
timeout $(left 240) $B qualify --filter linear_exact_ring --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "rc=$?" >> $O/qualify.txt
t "qualify: $(grep -E 'checks' $O/qualify.txt | tail -1)"
for i in 1 2; do
  timeout $(left 120) $B bench kernels --filter "ring mlp chain" --json $O/mlp_$i.jsonl > $O/mlp_$i.txt 2>&1
  echo "rc=$?" >> $O/mlp_$i.txt
  t "mlp pass $i: $(tail -1 $O/mlp_$i.txt)"
done
for i in 1 2; do
  NINFER_CACHE_DIR=$C90 NINFER_REV=$R90 timeout $(left 60) $B90 bench kernels --filter "ring mlp q4_g64 x20" --json $O/before_$i.jsonl > $O/before_$i.txt 2>&1
  timeout $(left 60) $B bench kernels --filter "ring mlp q4_g64 x20" --json $O/after_$i.jsonl > $O/after_$i.txt 2>&1
  t "before/after pass $i"
done
{
  python3 bench/kernels/v91/table.py "ring mlp chain" $O/mlp_1.jsonl $O/mlp_2.jsonl
  echo
  python3 bench/kernels/v91/table.py "ring mlp q4_g64 x20" $O/before_1.jsonl $O/after_1.jsonl $O/before_2.jsonl $O/after_2.jsonl
} > $O/table.txt 2>&1
tar czf $OUT/v91.tgz -C /tmp v91-out
echo "===== summary"
cat $O/context.txt
grep -hE 'FAIL|checks' $O/qualify.txt | tail -3
grep -h "not launched\|differ\|error" $O/mlp_*.txt | head -5
grep -h "copy" $O/mlp_1.txt | head -1
cat $O/table.txt
t done
