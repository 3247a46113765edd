#!/usr/bin/env bash
# bench/engine run 13 (device job, carry [".gpu"], staged by run13/stage.sh): the synthetic
# 27B q4_g64 at this revision with the installed profile against the heuristics
# (--profile-ab), one process (the random weights take ~100 s): prompt 4096 with
# --prefill-cublas (the GDN layers run the chunked prefill with the new prologue), decode
# at 1 and 8 lanes, 64 steps.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-400}
source scripts/gpu/job-lib.sh
job_init e13 "(installed profile)"
timeout $(left 380) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 4096 --prefill-cublas \
  --lanes 1,8 --decode-tokens 64 --profile-ab --json $O/bench.jsonl > $O/bench.txt 2>&1
echo "rc=$?" >> $O/bench.txt
t bench
tar czf $OUT/e13.tgz -C /tmp e13-out
echo "===== summary"
cat $O/context.txt
grep -vE "^note" $O/bench.txt | tail -14
t done
