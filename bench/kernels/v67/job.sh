#!/usr/bin/env bash
# v67: the mma register kernel stages its activations in cp.async phases (one L2 round trip a
# phase) instead of unit by unit; NINFER_MMA_PHASED=0 gives the old staging in the same
# binary. A template change: the profile is re-made first (scripts/gpu/tune.sh, one round),
# then used. carry [".gpu/v67"] (bench/kernels/v67/stage.sh). Two calls on one warm machine:
#   PART=1  qualify every mma route (phased); the 27B step's T = 8 launches (x20), phased,
#           unit by unit, phased; tune; synthetic Qwen3.6-27B q4_g64 bf16, greedy, phased,
#           lanes 1, 8, 1, 8
#   PART=2  the same model unit by unit (NINFER_MMA_PHASED=0), then phased with
#           --gdn-state-fp16, lanes 1, 8, 1, 8
set -u
T0=$(date +%s); LIMIT=${LIMIT:-560}
source scripts/gpu/job-lib.sh
PART=${PART:-1}
model() {  # NAME FLAGS...: one synthetic 27B run with the profile the first part made
  local name=$1; shift
  timeout $(left 250) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --profile $P "$@" --prompt 16 --warmup 0 --decode-tokens 64 --json $O/$name.jsonl > $O/$name.txt 2>&1
  echo "rc=$?" >> $O/$name.txt
  t "$name"
}
kernels() {  # NAME: the 27B step's T = 8 launches, x20
  timeout $(left 30) $B bench kernels --filter "linear_exact_mma step q4_g64 x20" --json $O/$1.jsonl > $O/$1.txt 2>&1
  echo "rc=$?" >> $O/$1.txt
  t "$1"
}
if [ "$PART" = 1 ]; then
  job_init v67 "(mma staging in cp.async phases)"
  timeout $(left 110) $B qualify --filter linear_exact_mma --json $O/qualify.jsonl > $O/qualify.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify.txt
  t qualify
  if ! grep -q " 0 failed" $O/qualify.txt; then
    grep -E 'FAIL|checks:|rc=' $O/qualify.txt | head -20
    tar czf $OUT/v67.tgz -C /tmp v67-out; exit 1
  fi
  kernels kernels_phased
  NINFER_MMA_PHASED=0 kernels kernels_units
  kernels kernels_phased2
  mkdir -p $O/tune
  OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 100) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
  t tune
  P=$O/tune/run1.toml
  model model27b_bf16_phased --activations bf16 --lanes 1,8,1,8
else
  B=/tmp/v67-ninfer; O=/tmp/v67-out; P=$O/tune/run1.toml
  export NINFER_REV="$(cat .gpu/v67/REV)" NINFER_CACHE_DIR=/tmp/v67-cache
  NINFER_MMA_PHASED=0 model model27b_bf16_units --activations bf16 --lanes 1,8,1,8
  model model27b_bf16_phased_fp16state --activations bf16 --gdn-state-fp16 --lanes 1,8,1,8
fi
tar czf $OUT/v67.tgz -C /tmp v67-out
echo "===== summary"
cat $O/context.txt
if [ "$PART" = 1 ]; then
  grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -4
  python3 - $O/kernels_phased.jsonl $O/kernels_units.jsonl $O/kernels_phased2.jsonl <<'PY'
import json, sys
runs = [[json.loads(l) for l in open(f)] for f in sys.argv[1:]]
print(f"{'shape':20} {'route':44} {'phased':>8} {'units':>8} {'phased':>8}")
for rs in zip(*runs):
    print(f"{rs[0]['shape']:20} {rs[0]['route'][-44:]:44} " + " ".join(f"{r['median_us']:8.2f}" for r in rs))
PY
  grep -E "same winners|differ|slower" $O/tune/compare.txt 2>/dev/null | head -3
fi
for f in $O/model27b*.txt; do echo "-- $(basename $f)"; grep -E '^(what|decode)|rc=' $f; done
t done
