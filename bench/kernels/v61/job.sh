#!/usr/bin/env bash
# v61: greedy decode steps take their argmax on the device and read back one id a lane
# (CausalLm::forward_greedy / forward_lanes_greedy). carry [".gpu"] (bench/kernels/v61/stage.sh).
#   qualify  the elementwise family (argmax eager and under graph replay)
#   compare  tiny fixtures and synthetic SmolLM2 q4_g64, 1 and 8 lanes (greedy step tokens
#            must equal the argmax of the logits; the cpu holds q4_g64 weights, a65b2b7)
#   host     the host copies of an 8-lane 27B logits read, alone (host_copies.rs)
#   bench    synthetic SmolLM2 and Qwen3.6-27B q4_g64, decode at 1 and 8 lanes, each row
#            timed greedy, logits, greedy, logits on one load (--readback)
set -u
T0=$(date +%s); LIMIT=${LIMIT:-590}
source scripts/gpu/job-lib.sh
job_init v61 "(greedy steps: argmax on the device)"
timeout $(left 120) $B qualify --filter elementwise --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
for m in llama qwen35_r2 qwen3_next; do
  for l in 1 8; do
    timeout $(left 60) $B compare --model tests/fixtures/tiny/$m --lanes $l --tokens 16 --json $O/compare.jsonl >> $O/compare.txt 2>&1
    echo "rc=$?" >> $O/compare.txt
  done
done
for act in exact bf16; do
  for l in 1 8; do
    timeout $(left 90) $B compare --synthetic smollm2-135m --weights q4_g64 --activations $act --lanes $l --tokens 32 --json $O/compare.jsonl >> $O/compare.txt 2>&1
    echo "rc=$?" >> $O/compare.txt
  done
done
t compare
.gpu/v61/host_copies > $O/host_copies.txt 2>&1
t host
RB="--readback greedy,logits,greedy,logits"
timeout $(left 90) $B bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 1,8 --decode-tokens 256 $RB --json $O/smollm2.jsonl > $O/smollm2.txt 2>&1
echo "rc=$?" >> $O/smollm2.txt
t smollm2
for act in bf16 exact; do
  timeout $(left 200) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --activations $act --prompt 16 --warmup 0 --lanes 1,8 --decode-tokens 64 $RB --json $O/model27b_$act.jsonl > $O/model27b_$act.txt 2>&1
  echo "rc=$?" >> $O/model27b_$act.txt
  t "27b $act"
done
tar czf $OUT/v61.tgz -C /tmp v61-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -4
grep -E 'PASS|FAIL|rc=[1-9]' $O/compare.txt | sed -E 's/per lane.*;//' | cut -c1-230
cat $O/host_copies.txt
for f in smollm2 model27b_bf16 model27b_exact; do echo "-- $f"; grep -E '^(what|prompt|decode)|rc=' $O/$f.txt; done
t done
