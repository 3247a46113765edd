#!/usr/bin/env bash
# v91: the 27B's one-column MLP (gate_up + RMSNorm + SwiGLU, then down + residual) in one
# launch of the ring kernel, a grid barrier between its phases, against the engine's two
# launches. carry [".gpu/v90", ".gpu/v91"] (bench/kernels/v90/stage.sh, v91/stage.sh).
# Two calls on a warm machine:
#   PART=1 (~4-6 min) qualify every ring route of the restructured template (its body is
#          now a phase function: the plain kernels must still pass); the bench of the one
#          launch (checked bit for bit, h and y, against the two launches on its geometry
#          before it is timed) twice; the existing one-column MLP bench (`ring mlp q4_g64
#          x20`) with v90's build (main's plain kernels) and this one, alternated.
#   PART=2 (~8-9 min) the engine with NINFER_MLP_LAUNCH=1: compare synthetic qwen3.6-mini
#          q4_g64 at 1 lane (its MLP takes the one launch) and 8 lanes (it does not);
#          the tuning job (a new template set: $O/tune/run1.toml); synthetic Qwen3.6-27B
#          q4_g64 --activations bf16 at 1 lane with that profile, NINFER_MLP_LAUNCH 1 / 0
#          alternated, one process each.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
source scripts/gpu/job-lib.sh
PART=${PART:-1}
if [ "$PART" = 1 ]; then
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
    python3 bench/kernels/v90/table.py "ring mlp chain" $O/mlp_1.jsonl $O/mlp_2.jsonl
    echo
    python3 bench/kernels/v90/table.py "ring mlp q4_g64 x20" $O/before_1.jsonl $O/after_1.jsonl $O/before_2.jsonl $O/after_2.jsonl
  } > $O/table.txt 2>&1
else
  job_init v91 "(mlp.patch: the ring GEMV as phases, an MLP in one launch)"
  for lanes in 1 8; do
    NINFER_MLP_LAUNCH=1 timeout $(left 90) $B compare --synthetic qwen3.6-mini --weights q4_g64 --lanes $lanes --json $O/compare_l$lanes.jsonl > $O/compare_l$lanes.txt 2>&1
    echo "rc=$?" >> $O/compare_l$lanes.txt
    t "compare $lanes lanes: $(tail -3 $O/compare_l$lanes.txt | head -2 | tr '\n' ' ')"
  done
  mkdir -p $O/tune
  OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 200) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
  t tune
  PROFILE=$O/tune/run1.toml; [ -f $PROFILE ] || PROFILE=
  i=0
  for sw in 1 0 1 0; do
    i=$((i + 1))
    NINFER_MLP_LAUNCH=$sw timeout $(left 120) $B bench model --synthetic qwen3.6-27b --weights q4_g64 ${PROFILE:+--profile $PROFILE} \
        --activations bf16 --lanes 1 --prompt 16 --warmup 0 --decode-tokens 64 --json $O/model27b_${i}_m$sw.jsonl > $O/model27b_${i}_m$sw.txt 2>&1
    echo "rc=$?" >> $O/model27b_${i}_m$sw.txt
    t "27B mlp launch $sw"
  done
  {
    for f in $O/compare_*.txt; do echo "== $(basename $f .txt)"; tail -4 $f; done
    tail -4 $O/tune.txt
    for f in $O/model27b_*.txt; do echo "== $(basename $f .txt)"; grep -E "^decode|floor|rc=" $f | tail -3; done
  } > $O/table.txt 2>&1
fi
tar czf $OUT/v91-$PART.tgz -C /tmp v91-out
echo "===== summary"
cat $O/context.txt
[ "$PART" = 1 ] && grep -hE 'FAIL|checks' $O/qualify.txt | tail -3
[ "$PART" = 1 ] && grep -h "does not take\|differ\|error" $O/mlp_*.txt | head -5
cat $O/table.txt
t done
