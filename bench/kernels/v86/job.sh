#!/usr/bin/env bash
# v86: gate_up's SwiGLU epilogue on the ring GEMV (T <= 4: one lane to four), so that the
# MLP's down projection stages its input as it is. carry [".gpu/v86"]
# (bench/kernels/v86/stage.sh). One call:
#   qualify every ring route with the SwiGLU epilogue (q4_g64, q8_g32; T = 1, 2, 4);
#   compare the tiny fixtures at one lane (their K takes no ring: the unfused pair, as before);
#   synthetic Qwen3.6-27B q4_g64 bf16, greedy, 64 steps, the heuristics (the template
#   change voids the installed profile): the epilogue (lanes 1, 8), then
#   NINFER_SWIGLU_EPILOGUE=0 (lane 1: SwiGLU in down's staging), one process each.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-560}
source scripts/gpu/job-lib.sh
job_init v86 "(the ring GEMV's SwiGLU epilogue)"
model() {  # NAME FLAGS...: one synthetic 27B run with the heuristics
  local name=$1; shift
  timeout $(left 220) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --no-profile --activations bf16 "$@" --prompt 16 --warmup 0 --decode-tokens 64 --json $O/$name.jsonl > $O/$name.txt 2>&1
  echo "rc=$?" >> $O/$name.txt
  t "$name"
}
timeout $(left 150) $B qualify --filter ring_q4_g64_swiglu,ring_q8_g32_swiglu --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
grep -E 'checks:|failed|rc=' $O/qualify.txt | tail -3
for m in llama qwen35_r2 qwen3_next; do
  timeout $(left 60) $B compare --model tests/fixtures/tiny/$m --lanes 1 --tokens 16 --json $O/compare.jsonl >> $O/compare.txt 2>&1
  echo "rc=$? ($m)" >> $O/compare.txt
done
t compare
model model27b_bf16 --lanes 1,8
NINFER_SWIGLU_EPILOGUE=0 model model27b_bf16_no_epilogue --lanes 1
tar czf $OUT/v86.tgz -C /tmp v86-out
echo "===== summary"
cat $O/context.txt
grep -E 'rc=' $O/compare.txt | tr '\n' ' '; echo
for f in model27b_bf16 model27b_bf16_no_epilogue; do echo "== $f"; grep -E "decode|floor|rc=" $O/$f.txt | tail -6; done
t done
