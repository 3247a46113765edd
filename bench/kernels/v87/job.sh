#!/usr/bin/env bash
# v87: the decode step's launches after three changes, each with an A/B switch: the gated
# attention core in one launch (NINFER_FUSED_ATTN=0: split, q/k RMSNorm, attention, sigmoid
# gate as separate launches), split-K sums in the mma GEMV's last block (NINFER_SPLITK_FUSED=0:
# linear/splitk_sum.cu as a second launch), the ring GEMV's SwiGLU epilogue (v86;
# NINFER_SWIGLU_EPILOGUE=0). carry [".gpu/v87"] (bench/kernels/v87/stage.sh). Two calls on
# one warm machine:
#   PART=1  qualify the mma routes, the ring SwiGLU routes and the attention family; compare
#           the tiny fixtures at 1 and 8 lanes; the 27B's T = 1 MLP pair x20 (v86's miss);
#           the tuning job (the template set changed: a new profile)
#   PART=2  synthetic Qwen3.6-27B q4_g64 bf16 with PART 1's profile: lanes 1, 8; then all
#           the two new switches off (lanes 1, 8; v86 measured the third); one process each
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
source scripts/gpu/job-lib.sh
PART=${PART:-1}
model() {  # NAME FLAGS...: one synthetic 27B run with PART 1's profile
  local name=$1; shift
  timeout $(left 240) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --profile $P --activations bf16 "$@" --prompt 16 --warmup 0 --decode-tokens 64 --json $O/$name.jsonl > $O/$name.txt 2>&1
  echo "rc=$?" >> $O/$name.txt
  t "$name"
}
if [ "$PART" = 1 ]; then
  job_init v87 "(fused gated attention; split-K sums in the GEMV; ring SwiGLU epilogue)"
  for f in linear_exact_mma ring_q4_g64_swiglu attn_decode_gated,attn_decode_rope; do
    timeout $(left 150) $B qualify --filter $f --json $O/qualify_$f.jsonl > $O/qualify_$f.txt 2>&1
    echo "qualify rc=$?" >> $O/qualify_$f.txt
    t "qualify $f: $(grep -E '^[0-9]+ checks' $O/qualify_$f.txt | tail -1)"
  done
  for m in llama qwen35_r2 qwen35_r3 qwen35_moe qwen3_next; do
    for l in 1 8; do
      timeout $(left 60) $B compare --model tests/fixtures/tiny/$m --lanes $l --tokens 16 --json $O/compare.jsonl >> $O/compare.txt 2>&1
      echo "rc=$? ($m, $l)" >> $O/compare.txt
    done
  done
  t "compare: $(grep -c PASS $O/compare.txt) PASS, $(grep -c 'rc=0' $O/compare.txt) rc=0 of 10"
  timeout $(left 60) $B bench kernels --filter "linear_exact ring mlp q4_g64 x20" --json $O/kernels.jsonl > $O/kernels.txt 2>&1
  echo "rc=$?" >> $O/kernels.txt
  t kernels
  mkdir -p $O/tune
  OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 150) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
  t tune
  echo "===== summary"
  cat $O/context.txt
  grep -E 'FAIL' $O/qualify_*.txt | head -5
  grep -E 'rc=' $O/compare.txt | tr '\n' ' '; echo
  grep -E 'ring|rc=' $O/kernels.txt | tail -6
  tail -12 $O/tune.txt
else
  B=/tmp/v87-ninfer; O=/tmp/v87-out; P=$O/tune/run1.toml
  export NINFER_REV="$(cat .gpu/v87/REV)" NINFER_CACHE_DIR=/tmp/v87-cache
  model model27b_bf16 --lanes 1,8
  NINFER_FUSED_ATTN=0 NINFER_SPLITK_FUSED=0 model model27b_bf16_off --lanes 1,8
  echo "===== summary"
  for f in model27b_bf16 model27b_bf16_off; do echo "== $f"; grep -E "^decode|rc=" $O/$f.txt | tail -3; done
fi
tar czf $OUT/v87.tgz -C /tmp v87-out
t done
