#!/usr/bin/env bash
# v70: two changes to the decode step's launches, each with an A/B switch, measured in one
# session: (a) the bf16 mode's MLP with gate_up's SwiGLU epilogue (gate_up writes
# silu(g) * u, down reads it with no prologue; NINFER_SWIGLU_EPILOGUE=0: SwiGLU in down's
# staging); (b) a stacked projection's outputs split in one launch (GDN in_proj: 4 copies
# -> 1, attention qkv: 5 -> 2 at lanes > 1; NINFER_SPLIT_COLS=0: a copy a part, split_heads
# stays one launch), and at lanes the GDN split step's prologue and output norm reading
# the in-projection's column blocks in place (no split at all; also off with the switch).
# A template change: the profile is re-made first (scripts/gpu/tune.sh,
# one round), then used. carry [".gpu/v70"] (bench/kernels/v70/stage.sh). Three calls on
# one warm machine:
#   PART=1  qualify every mma route, the elementwise family and GDN (its split step now
#           reads a stacked in-projection's rows in place); compare the tiny fixtures
#           at 1 and 8 lanes and synthetic SmolLM2 q4_g64 bf16 at 8 lanes, also with the
#           register kernel everywhere (NINFER_MMA_RING=0: the epilogue on its gate_up);
#           the 27B step's T = 8 launches (x20); tune
#   PART=2  synthetic Qwen3.6-27B q4_g64 bf16, greedy: both changes (lanes 1, 8, 1, 8), no
#           epilogue (1, 8), no one-launch split (1, 8)
#   PART=3  both changes with --gdn-state-fp16 (1, 8), and exact (1, 8)
#   PART=4  (a call of its own, on a fresh machine: job_init again) synthetic SmolLM2 q4_g64
#           with the installed profile (PART 1's, committed): prompt 4096, decode at 1 and 8
#           lanes over 256 steps (issue 8's SmolLM2 lines, after the split change)
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
if [ "$PART" = 4 ]; then
  job_init v70 "(gate_up's SwiGLU epilogue; one-launch column split)"
  timeout $(left 200) $B bench model --synthetic smollm2-135m --weights q4_g64 --profile tuning/nvidia-h200.toml --prompt 4096 --lanes 1,8 --decode-tokens 256 --json $O/smollm2.jsonl > $O/smollm2.txt 2>&1
  echo "rc=$?" >> $O/smollm2.txt
  t smollm2
elif [ "$PART" = 1 ]; then
  job_init v70 "(gate_up's SwiGLU epilogue; one-launch column split)"
  for f in linear_exact_mma elementwise gdn_; do
    timeout $(left 110) $B qualify --filter $f --json $O/qualify_$f.jsonl > $O/qualify_$f.txt 2>&1
    echo "qualify rc=$?" >> $O/qualify_$f.txt
    t "qualify $f"
    if ! grep -q " 0 failed" $O/qualify_$f.txt; then
      grep -E 'FAIL|checks:|rc=' $O/qualify_$f.txt | head -20
      tar czf $OUT/v70.tgz -C /tmp v70-out; exit 1
    fi
  done
  for m in llama qwen35_r2 qwen3_next; do
    for l in 1 8; do
      timeout $(left 60) $B compare --model tests/fixtures/tiny/$m --lanes $l --tokens 16 --json $O/compare.jsonl >> $O/compare.txt 2>&1
      echo "rc=$?" >> $O/compare.txt
    done
  done
  for ring in 1 0; do
    NINFER_MMA_RING=$ring timeout $(left 90) $B compare --synthetic smollm2-135m --weights q4_g64 --activations bf16 --lanes 8 --tokens 32 --json $O/compare.jsonl >> $O/compare.txt 2>&1
    echo "rc=$? (NINFER_MMA_RING=$ring)" >> $O/compare.txt
  done
  t compare
  timeout $(left 30) $B bench kernels --filter "linear_exact_mma step q4_g64 x20" --json $O/kernels.jsonl > $O/kernels.txt 2>&1
  echo "rc=$?" >> $O/kernels.txt
  t kernels
  mkdir -p $O/tune
  OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 100) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
  t tune
else
  B=/tmp/v70-ninfer; O=/tmp/v70-out; P=$O/tune/run1.toml
  export NINFER_REV="$(cat .gpu/v70/REV)" NINFER_CACHE_DIR=/tmp/v70-cache
  if [ "$PART" = 2 ]; then
    model model27b_bf16 --activations bf16 --lanes 1,8,1,8
    NINFER_SWIGLU_EPILOGUE=0 model model27b_bf16_no_epilogue --activations bf16 --lanes 1,8
    NINFER_SPLIT_COLS=0 model model27b_bf16_no_split --activations bf16 --lanes 1,8
  else
    model model27b_bf16_fp16state --activations bf16 --gdn-state-fp16 --lanes 1,8
    model model27b_exact --lanes 1,8
  fi
fi
tar czf $OUT/v70.tgz -C /tmp v70-out
echo "===== summary"
cat $O/context.txt
if [ "$PART" = 1 ]; then
  grep -hE 'checks:|rc=|FAIL' $O/qualify_*.txt | head -6
  grep -E 'PASS|FAIL|rc=' $O/compare.txt | sed -E 's/per lane.*;//' | cut -c1-200
  python3 - $O/kernels.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(f"{r['shape']:20} {r['route'][-48:]:48} {r['median_us']:8.2f}")
PY
  grep -E "same winners|differ|slower" $O/tune/compare.txt 2>/dev/null | head -3
fi
for f in $O/smollm2.txt $O/model27b*.txt; do [ -f $f ] && { echo "-- $(basename $f)"; grep -E '^(what|prompt|decode)|rc=' $f; }; done
t done
