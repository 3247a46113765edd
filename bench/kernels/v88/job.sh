#!/usr/bin/env bash
# v88: the mma register GEMV (T = 8, 16, 32) in thread block clusters of C blocks that stage
# their shared K-range of activations once a cluster (NINFER_MMA_CLUSTER=C; 1 = as before).
# carry [".gpu/v88"] (bench/kernels/v88/stage.sh). Two calls on one warm machine:
#   PART=1  qualify the mma routes with C = 2 and with C = 4; bench kernels (the mma x20
#           shapes T = 1..32 and the 27B's T = 8 step launches) at C = 1, 2, 4, one process
#           each; the tuning job (the template set changed: a new profile)
#   PART=3  qualify every mma route with C = 2 (part 1's ran out of time)
#   PART=2  (a fresh machine) qualify the C = 2 routes alone; synthetic Qwen3.6-27B q4_g64
#           bf16 with PART 1's profile (.gpu/v88/run1.toml), lanes 1 and 8, at C in
#           $CLUSTERS (default 1 2), one process each
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
source scripts/gpu/job-lib.sh
PART=${PART:-1}
model() {  # NAME: one synthetic 27B run with PART 1's profile (NINFER_MMA_CLUSTER from the caller)
  local name=$1; shift
  timeout $(left 200) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --profile $P --activations bf16 --lanes 1,8 --prompt 16 --warmup 0 --decode-tokens 64 --json $O/$name.jsonl > $O/$name.txt 2>&1
  echo "rc=$?" >> $O/$name.txt
  t "$name"
}
if [ "$PART" = 1 ]; then
  job_init v88 "(mma GEMV blocks in clusters staging their K-range together)"
  for c in 2 4; do
    NINFER_MMA_CLUSTER=$c timeout $(left 150) $B qualify --filter linear_exact_mma --json $O/qualify_c$c.jsonl > $O/qualify_c$c.txt 2>&1
    echo "qualify rc=$?" >> $O/qualify_c$c.txt
    t "qualify C=$c: $(grep -E '^[0-9]+ checks' $O/qualify_c$c.txt | tail -1)"
  done
  for c in 1 2 4; do
    NINFER_MMA_CLUSTER=$c timeout $(left 90) $B bench kernels --filter "linear_exact_mma q4_g64 x20|linear_exact_mma step q4_g64 x20" --json $O/kernels_c$c.jsonl > $O/kernels_c$c.txt 2>&1
    echo "rc=$?" >> $O/kernels_c$c.txt
    t "kernels C=$c"
  done
  mkdir -p $O/tune
  OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 150) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
  t tune
  echo "===== summary"
  cat $O/context.txt
  grep -h -E 'FAIL' $O/qualify_*.txt | head -5
  python3 bench/kernels/v88/table.py $O
  tail -4 $O/tune.txt
elif [ "$PART" = 3 ]; then
  # Every mma route (the unclustered tiles' template changed too: the block ranges and the
  # staging moved into helpers) and the clustered bf16 ones, with the time it needs.
  job_init v88 "(mma GEMV blocks in clusters staging their K-range together)"
  NINFER_MMA_CLUSTER=2 timeout $(left 560) $B qualify --filter linear_exact_mma --json $O/qualify_all.jsonl > $O/qualify_all.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify_all.txt
  t "qualify all mma routes, C=2: $(grep -E '^[0-9]+ checks' $O/qualify_all.txt | tail -1)"
  grep -E 'FAIL' $O/qualify_all.txt | head -5
else
  # A fresh machine (PART 1's was given back): PART 1's profile travels as .gpu/v88/run1.toml.
  job_init v88 "(mma GEMV blocks in clusters staging their K-range together)"
  P=.gpu/v88/run1.toml
  # PART 1's qualify of all mma routes ran past its 150 s (no result); here the cluster
  # routes alone (entry names with _c2), with more time.
  # SWEEPS=0 (a second A/B pair): the models alone.
  if [ "${SWEEPS:-1}" = 1 ]; then
  NINFER_MMA_CLUSTER=2 timeout $(left 240) $B qualify --filter _c2 --json $O/qualify_c2.jsonl > $O/qualify_c2.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify_c2.txt
  t "qualify C=2: $(grep -E '^[0-9]+ checks' $O/qualify_c2.txt | tail -1)"
  fi
  for c in ${CLUSTERS:-1 2}; do NINFER_MMA_CLUSTER=$c model model27b_c$c; done
  if [ "${SWEEPS:-1}" = 1 ]; then
  # The step launches' K-ranges forced 1..10 with clusters of 2 (a K-range of one slab and
  # clusters may make one K-range, without the sums' launch, pay on the 5120-row outputs).
  NINFER_MMA_CLUSTER=2 timeout $(left 100) $B bench kernels --filter "linear_exact_mma step k-ranges q4_g64 x20" --json $O/kranges_c2.jsonl > $O/kranges_c2.txt 2>&1
  echo "rc=$?" >> $O/kranges_c2.txt
  t "k-ranges C=2"
  fi
  echo "===== summary"
  grep -sE 'FAIL' $O/qualify_c2.txt | head -5
  for c in ${CLUSTERS:-1 2}; do echo "== C=$c"; grep -E "^decode|rc=" $O/model27b_c$c.txt | tail -3; done
fi
tar czf $OUT/v88.tgz -C /tmp v88-out
t done
