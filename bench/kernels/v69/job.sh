#!/usr/bin/env bash
# v69: the mma register kernel's one-shot L2 hints before its staging (l2_lines lines of each
# row of a warp's first m-tile, after its first register buffer). carry [".gpu/v69"]. Two
# calls on one warm machine:
#   PART=1  qualify every mma route (default 4 lines); the 27B step's T = 8 launches x20 at
#           0, 4, 8, 0, 4 lines (NINFER_MMA_L2_LINES)
#   PART=2  tune (the template set changed), then synthetic Qwen3.6-27B q4_g64 bf16, greedy,
#           lanes 1, 8, 1, 8 with the hints off (0) and at LINES (default 4)
set -u
T0=$(date +%s); LIMIT=${LIMIT:-560}
source scripts/gpu/job-lib.sh
PART=${PART:-1}
kernels() {  # NAME: the 27B step's T = 8 launches, x20
  timeout $(left 30) $B bench kernels --filter "linear_exact_mma step q4_g64 x20" --json $O/$1.jsonl > $O/$1.txt 2>&1
  echo "rc=$?" >> $O/$1.txt
  t "$1"
}
model() {  # NAME FLAGS...
  local name=$1; shift
  timeout $(left 250) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --profile $P "$@" --prompt 16 --warmup 0 --decode-tokens 64 --json $O/$name.jsonl > $O/$name.txt 2>&1
  echo "rc=$?" >> $O/$name.txt
  t "$name"
}
if [ "$PART" = 1 ]; then
  job_init v69 "(mma: L2 hints before the staging)"
  timeout $(left 110) $B qualify --filter linear_exact_mma --json $O/qualify.jsonl > $O/qualify.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify.txt
  t qualify
  if ! grep -q " 0 failed" $O/qualify.txt; then
    grep -E 'FAIL|checks:|rc=' $O/qualify.txt | head -20
    tar czf $OUT/v69.tgz -C /tmp v69-out; exit 1
  fi
  NINFER_MMA_L2_LINES=0 kernels k_l0
  NINFER_MMA_L2_LINES=4 kernels k_l4
  NINFER_MMA_L2_LINES=8 kernels k_l8
  NINFER_MMA_L2_LINES=0 kernels k_l0b
  NINFER_MMA_L2_LINES=4 kernels k_l4b
  grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -4
  python3 - $O/k_l0.jsonl $O/k_l4.jsonl $O/k_l8.jsonl $O/k_l0b.jsonl $O/k_l4b.jsonl <<'PY' | tee $O/table.txt
import json, sys
runs = [[json.loads(l) for l in open(f)] for f in sys.argv[1:]]
print(f"{'shape':20} {'route':44} {'0':>8} {'4':>8} {'8':>8} {'0':>8} {'4':>8}")
for rs in zip(*runs):
    print(f"{rs[0]['shape']:20} {rs[0]['route'][-44:]:44} " + " ".join(f"{r['median_us']:8.2f}" for r in rs))
PY
else
  B=/tmp/v69-ninfer; O=/tmp/v69-out
  export NINFER_REV="$(cat .gpu/v69/REV)" NINFER_CACHE_DIR=/tmp/v69-cache
  mkdir -p $O/tune
  OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 100) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
  t tune
  P=$O/tune/run1.toml
  NINFER_MMA_L2_LINES=0 model model27b_bf16_l0 --activations bf16 --lanes 1,8,1,8
  NINFER_MMA_L2_LINES=${LINES:-4} model model27b_bf16_l${LINES:-4} --activations bf16 --lanes 1,8,1,8
  for f in $O/model27b*.txt; do echo "-- $(basename $f)"; grep -E '^(what|decode)|rc=' $f; done
fi
tar czf $OUT/v69.tgz -C /tmp v69-out
t done
