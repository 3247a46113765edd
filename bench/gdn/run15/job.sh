#!/usr/bin/env bash
# bench/gdn run 15 (device job, carry [".gpu/g15"], staged by run15/stage.sh): the split
# step's update with a block taking `group` column tiles, `depth` of them loaded ahead.
#   PART=1  decode qualify (gdn_gpu --decode-only: every step route, the split ones at 3
#           and 8 lanes), the decode bench twice (each split route's whole step and its two
#           halves alone at 8 lanes; fla's figures from run 9), then the tuning job (the
#           template set changed) into $O/tune; its profile is $O/tune/run1.toml
#   PART=2  synthetic Qwen3.6-27B q4_g64 --activations bf16, lanes 1 and 8, with the
#           profile at $PROFILE (default .gpu/g15/run1.toml), f32 and f16 GDN state, one
#           process each
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
source scripts/gpu/job-lib.sh
PART=${PART:-1}
job_init g15 "(gdn/update.cu: group column tiles a block, depth loaded ahead)"
G=/tmp/g15-gdn_gpu
xz -dc .gpu/g15/gdn_gpu.xz > $G && chmod +x $G
P9=bench/gdn/run9
if [ "$PART" = 1 ]; then
  timeout $(left 150) $G --decode-only --skip-bench --qualify-json $O/qualify.jsonl > $O/qualify.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify.txt
  t "qualify: $(grep -ciE 'fail' $O/qualify.txt) lines with FAIL; $(tail -2 $O/qualify.txt | head -1)"
  for run in a b; do
    timeout $(left 90) $G --decode-only --skip-qualify --rev "$NINFER_REV" --peer $P9/peer.jsonl \
        --peer-called $P9/peer_called.jsonl --json $O/decode_$run.jsonl > $O/decode_$run.txt 2>&1
    echo "bench rc=$?" >> $O/decode_$run.txt
    t "decode bench $run"
  done
  mkdir -p $O/tune
  OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 200) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
  t tune
  echo "===== summary"
  cat $O/context.txt
  grep -h -iE 'FAIL' $O/qualify.txt | head -5
  grep -h -E '^copy' $O/decode_a.txt | head -2
  python3 bench/gdn/run15/table.py $O/decode_a.jsonl $O/decode_b.jsonl
  tail -4 $O/tune.txt
else
  PROFILE=${PROFILE:-.gpu/g15/run1.toml}
  for st in f32 f16; do
    timeout $(left 220) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --profile $PROFILE \
        --activations bf16 $([ $st = f16 ] && echo --gdn-state-fp16) --lanes 1,8 --prompt 16 --warmup 0 \
        --decode-tokens 64 --json $O/model27b_$st.jsonl > $O/model27b_$st.txt 2>&1
    echo "rc=$?" >> $O/model27b_$st.txt
    t "27B $st"
  done
  echo "===== summary"
  for st in f32 f16; do echo "== $st"; grep -E "^decode|floor|rc=" $O/model27b_$st.txt | tail -4; done
fi
tar czf $OUT/g15-$PART.tgz -C /tmp g15-out
t done
