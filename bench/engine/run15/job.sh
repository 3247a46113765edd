#!/usr/bin/env bash
# bench/engine run 15 (device job, carry [".gpu/r60"]; LIMIT s, default 200): the loader's
# reused buffer (baf7b2f-32cd8a3: `linear_from_f32_ref`, LoadScratch) on the GPU, with run
# 60's build of the same revision. `ninfer compare` against the cpu backend on every tiny
# fixture (real GGUF files through the loader: 1 lane, and 8 lanes), and on synthetic
# qwen3.6-mini and SmolLM2 at q4_g64 (1 and 8 lanes); then the synthetic 27B's load time
# (q4_g64, one prompt and four decode steps at one lane), which was 27.6-34.6 s before.
# Outputs: $OUT/e15.tgz, summary-e15.txt (so that it can follow run 60 in one call).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-200}
source scripts/gpu/job-lib.sh
job_init r60 "(bench/engine run 15: the loader's reused buffer)"
# Its own output folder: run 60's job, run before it in the same call, uses /tmp/r60-out.
O=/tmp/e15-out; rm -rf $O; mkdir -p $O; cp /tmp/r60-out/context.txt $O/
crc=0
cmp() {
  echo "\$ ninfer compare $*" >> $O/compare.txt
  timeout $(left 60) $B compare "$@" --json $O/compare.jsonl >> $O/compare.txt 2>&1 || { crc=1; echo "FAILED $*" >> $O/compare.txt; }
}
for fx in tests/fixtures/tiny/*/; do cmp --model "$fx"; cmp --model "$fx" --lanes 8; done
for m in qwen3.6-mini smollm2-135m; do
  cmp --synthetic $m --weights q4_g64; cmp --synthetic $m --weights q4_g64 --lanes 8
done
t "compare exit $crc"
timeout $(left 120) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --lanes 1 --prompt 16 \
  --warmup 0 --decode-tokens 4 --json $O/load27b.jsonl > $O/load27b.txt 2>&1
echo "rc=$?" >> $O/load27b.txt
t "27B load"
tar czf $OUT/e15.tgz -C /tmp e15-out
{
echo "===== summary"
cat $O/context.txt
grep -E 'PASS|FAIL' $O/compare.txt | sed -e 's/^.*fixtures\/tiny\///' | cut -c1-160
echo "compare exit $crc"
grep -E 'loaded in|^decode|rc=' $O/load27b.txt | cut -c1-160
t done
} | tee $OUT/summary-e15.txt
