#!/usr/bin/env bash
# v70: the bf16 mode's MLP with gate_up's SwiGLU epilogue (gate_up writes silu(g) * u, down
# reads it with no prologue) against SwiGLU in down's staging (NINFER_SWIGLU_EPILOGUE=0), in
# one session. A template change: the profile is re-made first (scripts/gpu/tune.sh, one
# round), then used. carry [".gpu/v70"] (bench/kernels/v70/stage.sh). Two calls on one warm
# machine:
#   PART=1  qualify every mma route; the 27B step's T = 8 launches (x20); tune; synthetic
#           Qwen3.6-27B q4_g64 bf16, greedy, lanes 1, 8, 1, 8 with the epilogue
#   PART=2  the same without it (NINFER_SWIGLU_EPILOGUE=0), then with it again; then with
#           --gdn-state-fp16 (lanes 1, 8)
set -u
T0=$(date +%s); LIMIT=${LIMIT:-560}
source scripts/gpu/job-lib.sh
PART=${PART:-1}
model() {  # NAME FLAGS...: one synthetic 27B run with the profile the first part made
  local name=$1; shift
  timeout $(left 200) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --profile $P "$@" --prompt 16 --warmup 0 --decode-tokens 64 --json $O/$name.jsonl > $O/$name.txt 2>&1
  echo "rc=$?" >> $O/$name.txt
  t "$name"
}
if [ "$PART" = 1 ]; then
  job_init v70 "(gate_up's SwiGLU epilogue)"
  timeout $(left 110) $B qualify --filter linear_exact_mma --json $O/qualify.jsonl > $O/qualify.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify.txt
  t qualify
  if ! grep -q " 0 failed" $O/qualify.txt; then
    grep -E 'FAIL|checks:|rc=' $O/qualify.txt | head -20
    tar czf $OUT/v70.tgz -C /tmp v70-out; exit 1
  fi
  timeout $(left 30) $B bench kernels --filter "linear_exact_mma step q4_g64 x20" --json $O/kernels.jsonl > $O/kernels.txt 2>&1
  echo "rc=$?" >> $O/kernels.txt
  t kernels
  mkdir -p $O/tune
  OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 100) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
  t tune
  P=$O/tune/run1.toml
  model model27b_bf16_epi --activations bf16 --lanes 1,8,1,8
else
  B=/tmp/v70-ninfer; O=/tmp/v70-out; P=$O/tune/run1.toml
  export NINFER_REV="$(cat .gpu/v70/REV)" NINFER_CACHE_DIR=/tmp/v70-cache
  NINFER_SWIGLU_EPILOGUE=0 model model27b_bf16_noepi --activations bf16 --lanes 1,8
  model model27b_bf16_epi2 --activations bf16 --lanes 1,8
  model model27b_bf16_fp16state_epi --activations bf16 --gdn-state-fp16 --lanes 1,8
fi
tar czf $OUT/v70.tgz -C /tmp v70-out
echo "===== summary"
cat $O/context.txt
if [ "$PART" = 1 ]; then
  grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -4
  python3 - $O/kernels.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(f"{r['shape']:20} {r['route'][-48:]:48} {r['median_us']:8.2f}")
PY
  grep -E "same winners|differ|slower" $O/tune/compare.txt 2>/dev/null | head -3
fi
for f in $O/model27b*.txt; do echo "-- $(basename $f)"; grep -E '^(what|prompt|decode)|rc=' $f; done
t done
