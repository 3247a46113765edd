#!/usr/bin/env bash
# v71: the A16 route on Hopper's warpgroup tensor cores (linear/a16_wgmma.cu: wgmma from
# swizzled shared memory, W decoded by the issuing warps while the tensor cores run).
# carry [".gpu/v71"] (bench/kernels/v71/stage.sh).
#   PART=1  qualify linear_wgmma and linear_pipe (its decode moved into a shared header),
#           then the linear bench for q4_g64 and q8_g32 (every prefill tile beside cuBLAS
#           bf16 at T = 4096 on 17408x5120, and the decode shapes)
#   PART=3  (the staged kernel cache) the tuning profile re-made for the new template set
#           (scripts/gpu/tune.sh, one round); `ninfer compare` of synthetic SmolLM2 q4_g64
#           with bf16 activations through a 300-token prompt (the A16 route) against the
#           cpu backend; synthetic 27B and SmolLM2 q4_g64 bf16 prefill at 4096 with the
#           warpgroup kernel and with NINFER_WGMMA=0 (the pipelined kernel): the 27B once
#           each, SmolLM2 twice each, alternating
#   PART=4  `ninfer compare` of the tiny llama, qwen35_r2 and qwen3_next fixtures, q4_g64
#           weights, bf16 activations, through a prompt of more than 32 tokens (the A16
#           route's prefill), at 1 and 8 lanes, with the warpgroup kernel and with
#           NINFER_WGMMA=0
#   PART=2  ncu on the first launch of each warpgroup tile, T = 4096 on 17408x5120 (the
#           bench's own launches): stall reasons, tensor-pipe activity, instructions
set -u
T0=$(date +%s); LIMIT=${LIMIT:-560}
source scripts/gpu/job-lib.sh
PART=${PART:-1}
if [ "$PART" = 1 ]; then
  job_init v71 "(A16 warpgroup kernel)"
  for f in linear_wgmma linear_pipe; do
    timeout $(left 150) $B qualify --filter $f --json $O/qualify_$f.jsonl > $O/qualify_$f.txt 2>&1
    echo "qualify rc=$?" >> $O/qualify_$f.txt
    t "qualify $f"
    grep -E 'FAIL|checks:|failed|rc=' $O/qualify_$f.txt | head -20
  done
  timeout $(left 200) $B bench kernels --filter "linear q4_g64|linear q8_g32" --json $O/kernels.jsonl > $O/kernels.txt 2>&1
  echo "rc=$?" >> $O/kernels.txt
  t kernels
elif [ "$PART" = 3 ]; then
  job_init v71 "(A16 warpgroup kernel)"
  for w in 1 0; do
    NINFER_WGMMA=$w timeout $(left 120) $B compare --synthetic smollm2-135m --weights q4_g64 --activations bf16 --synthetic-prompt 300 --tokens 16 --json $O/compare.jsonl >> $O/compare.txt 2>&1
    echo "rc=$? (NINFER_WGMMA=$w)" >> $O/compare.txt
  done
  t compare
  mkdir -p $O/tune
  OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 150) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
  t tune
  P=$O/tune/run1.toml
  for w in 1 0; do  # the 27B's random weights take ~90 s a process: one round
    NINFER_WGMMA=$w timeout $(left 170) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --activations bf16 --profile $P --prompt 4096 --lanes 1 --decode-tokens 4 --json $O/prefill27b.jsonl >> $O/prefill27b.txt 2>&1
    echo "rc=$? (NINFER_WGMMA=$w)" >> $O/prefill27b.txt
    t "27b prefill NINFER_WGMMA=$w"
  done
  for w in 1 0 1 0; do
    NINFER_WGMMA=$w timeout $(left 60) $B bench model --synthetic smollm2-135m --weights q4_g64 --activations bf16 --profile $P --prompt 4096 --lanes 1 --decode-tokens 4 --json $O/prefill_smollm2.jsonl >> $O/prefill_smollm2.txt 2>&1
    echo "rc=$? (NINFER_WGMMA=$w)" >> $O/prefill_smollm2.txt
  done
  t "smollm2 prefill"
elif [ "$PART" = 4 ]; then
  job_init v71 "(A16 warpgroup kernel)"
  long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools. Over the centuries the settlement grew into a market town, then into a walled city with a cathedral, a university and a harbour that sent ships to every port of the known world."
  for m in llama qwen35_r2 qwen3_next; do
    for l in 1 8; do
      for w in 1 0; do
        NINFER_WGMMA=$w timeout $(left 60) $B compare --model tests/fixtures/tiny/$m --weights q4_g64 --activations bf16 --prompt "$long" --lanes $l --tokens 16 --json $O/compare_tiny.jsonl >> $O/compare_tiny.txt 2>&1
        echo "rc=$? ($m, lanes $l, NINFER_WGMMA=$w)" >> $O/compare_tiny.txt
      done
    done
  done
  t compare
elif [ "$PART" = 2 ]; then
  # ncu on one launch of each warpgroup tile: its stall reasons and tensor-pipe activity
  job_init v71 "(A16 warpgroup kernel)"
  for k in 256x128_g4 256x128_g2 128x256_g2; do
    timeout $(left 150) ncu --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats \
      --section WarpStateStats --section LaunchStats --section Occupancy \
      --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio','regex:sm__pipe_.*tensor.*cycles_active\.avg\.pct_of_peak_sustained_active','smsp__inst_executed.sum' \
      -k regex:linear_wgmma_q4_g64_plain_$k -c 1 $B bench kernels --filter "linear q4_g64" > $O/ncu_$k.txt 2>&1
    echo "ncu rc=$?" >> $O/ncu_$k.txt
    t "ncu $k"
  done
fi
tar czf $OUT/v71.tgz -C /tmp v71-out
echo "===== summary"
cat $O/context.txt
[ -f $O/kernels.txt ] && grep -E "T=4096|rc=" $O/kernels.txt | head -30
for f in $O/compare.txt $O/compare_tiny.txt; do [ -f $f ] && grep -E "identical|differ|rc=" $f | cut -c1-220; done
[ -f $O/tune.txt ] && tail -5 $O/tune.txt
for f in $O/prefill*.txt; do [ -f $f ] && grep -E "prompt|rc=" $f | cut -c1-150; done
for f in $O/ncu_*.txt; do [ -f $f ] && { echo "== $f"; grep -E "Duration|stalled|tensor|inst_executed|Issue Slots|rc=" $f | awk '$NF+0 > 0.05 || /Duration|inst_exec|rc=|tensor/' | cut -c1-130; }; done
true
