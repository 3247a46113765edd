#!/usr/bin/env bash
# bench/engine run 14 (device job, carry [".gpu/e14"], staged by run14/stage.sh): issue 8's
# 8-lane line again, at the defaults of this revision (clustered bf16 mma tiles, the
# installed profile), in processes of their own:
#   1. qualify the clustered mma routes (`_c2`: this revision's launch path, with the arch
#      gate and the fallback before compile, has not run on a GPU before);
#   2. synthetic Qwen3.6-27B q4_g64 --activations bf16, lanes 1 and 8, REPEAT processes
#      (default 2), then one with --gdn-state-fp16.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
source scripts/gpu/job-lib.sh
job_init e14 "(defaults; installed profile)"
P=tuning/nvidia-h200.toml
timeout $(left 120) $B qualify --filter _c2 --json $O/qualify_c2.jsonl > $O/qualify_c2.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_c2.txt
t "qualify _c2: $(grep -E '^[0-9]+ checks|pass' $O/qualify_c2.txt | tail -1)"
model() {  # NAME [FLAGS...]
  local name=$1; shift
  timeout $(left 200) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --profile $P --activations bf16 \
      "$@" --lanes 1,8 --prompt 16 --warmup 0 --decode-tokens 64 --json $O/$name.jsonl > $O/$name.txt 2>&1
  echo "rc=$?" >> $O/$name.txt
  t "$name"
}
for i in $(seq 1 ${REPEAT:-2}); do model model27b_$i; done
model model27b_f16 --gdn-state-fp16
echo "===== summary"
cat $O/context.txt
grep -hE 'FAIL' $O/qualify_c2.txt | head -5
for f in $O/model27b_*.txt; do echo "== $(basename $f .txt)"; grep -E "^decode|floor|rc=" $f | tail -4; done
tar czf $OUT/e14.tgz -C /tmp e14-out
t done
