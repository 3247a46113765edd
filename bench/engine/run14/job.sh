#!/usr/bin/env bash
# bench/engine run 14 (device job, carry [".gpu/e14"]): the engine at this revision on the
# GPU without the default model's file: qualify the ops the cuda backend uses (as
# scripts/gpu/engine.sh), then `ninfer compare` against the cpu backend on every tiny
# fixture (1 lane, and 8 lanes at f32 weights), on synthetic qwen3.6-mini (q4_g64, 1 and 8
# lanes) and on synthetic SmolLM2 (q4_g64, 1 and 8 lanes).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
source scripts/gpu/job-lib.sh
job_init e14 "(engine check)"
timeout $(left 330) $B qualify --json $O/qualify.jsonl \
    --filter linear_exact,attention,elementwise,rope,rmsnorm,embedding_f32_f32,embedding_q8_g32_f32 > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t "qualify: $(grep -E 'checks:' $O/qualify.txt | tail -1)"
crc=0
cmp() {
  echo "\$ ninfer compare $*" >> $O/compare.txt
  timeout $(left 60) $B compare "$@" --json $O/compare.jsonl >> $O/compare.txt 2>&1 || crc=1
}
for fx in tests/fixtures/tiny/*/; do cmp --model "$fx"; cmp --model "$fx" --lanes 8; done
for m in qwen3.6-mini smollm2-135m; do
  cmp --synthetic $m --weights q4_g64; cmp --synthetic $m --weights q4_g64 --lanes 8
done
t "compare exit $crc"
echo "===== summary"
cat $O/context.txt
grep -hE 'FAIL' $O/qualify.txt | head -5
grep -hE 'checks:|rc=' $O/qualify.txt
grep -E 'PASS|FAIL' $O/compare.txt | sed -e 's/^.*fixtures\/tiny\///' | cut -c1-160
tar czf $OUT/e14.tgz -C /tmp e14-out
t done
