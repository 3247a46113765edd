#!/usr/bin/env bash
# v64 (measurement): the synthetic 27B's decode with --activations bf16 under two switches
# that exist, one process each, lanes 1, 8, 1, 8 (greedy): --unfused (RMSNorm and SwiGLU as
# kernels of their own before the plain GEMVs, instead of folded into their staging) and
# --gdn-state-fp16 (the GDN state stored in f16). Binary and kernels: .gpu/v63 (a02381a).
# carry [".gpu/v63"].
set -u
T0=$(date +%s); LIMIT=${LIMIT:-590}
source scripts/gpu/job-lib.sh
job_init v63 "(v64: --unfused, --gdn-state-fp16)"
for flag in --unfused --gdn-state-fp16; do
  f=${flag#--}
  timeout $(left 250) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --activations bf16 $flag --prompt 16 --warmup 0 --lanes 1,8,1,8 --decode-tokens 64 --json $O/model27b_$f.jsonl > $O/model27b_$f.txt 2>&1
  echo "rc=$?" >> $O/model27b_$f.txt
  t "27b $f"
done
rm -rf /tmp/v64-out && cp -r $O /tmp/v64-out && tar czf $OUT/v64.tgz -C /tmp v64-out
echo "===== summary"
cat $O/context.txt
for f in unfused gdn-state-fp16; do echo "-- $f"; grep -E '^(what|prompt|decode)|rc=' $O/model27b_$f.txt; done
t done
