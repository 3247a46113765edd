#!/usr/bin/env bash
# v40 job: the profile for the template set with gemv_mma.cu's header comment corrected
# (the comment is Tera's, so no kernel changes; the set's hash does), and the A16 route
# end to end. Stage with bench/kernels/v40/stage.sh; carry [".gpu"]. Steps, cut to LIMIT:
#   tune     scripts/gpu/tune.sh (the profile to install)
#   prompt   synthetic SmolLM2 q4_g64, prompt 4096: exact (the default: f32 activations),
#            --activations bf16 (prefill linears on linear/a16_pipe.cu), and
#            --prefill-cublas (cuBLAS bf16), each in its own process
# Output: $OUT/v40.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-585}
source scripts/gpu/job-lib.sh
job_init v40 "(working tree: gemv_mma.cu comment)"
mkdir -p $O/tune
( sleep $((LIMIT - 8)); tar czf $OUT/partial.tgz -C /tmp v40-out ) > /dev/null 2>&1 &
PARTIAL=$!
OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 150) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
echo "rc=$?" >> $O/tune.txt
t tune
BM="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 4096 --decode-tokens 8 --lanes 1 --profile $O/tune/run1.toml"
for m in exact bf16 cublas; do
  case $m in exact) x="";; bf16) x="--activations bf16";; cublas) x="--prefill-cublas";; esac
  echo "\$ ninfer $BM $x" > $O/prompt_$m.txt
  timeout $(left 60) $B $BM $x --json $O/prompt_$m.jsonl >> $O/prompt_$m.txt 2>&1
  echo "rc=$?" >> $O/prompt_$m.txt
done
t prompt
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $OUT/v40.tgz -C /tmp v40-out
echo "===== summary"
cat $O/context.txt
grep noise $O/tune/compare.txt | tail -1
tail -3 $O/tune.txt
for m in exact bf16 cublas; do echo "$m:"; grep -E '^prompt  |rc=' $O/prompt_$m.txt | cut -c1-100; done
t done
