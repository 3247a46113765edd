#!/usr/bin/env bash
# bench/gdn run 34 (device job, carry [".gpu/r34"]; ~3-5 min): the f16 scan on warpgroup
# tensor cores (gdn/chunk_wg.cu) with its copies and o stores by TMA. The prefill qualify (every route the GPU runs, T = 1 to
# 4096, both state types), then the prefill bench twice (every route, each stage alone;
# fla's figures from run 3), then compare on the GDN fixtures and the bf16 qwen3.6-mini
# (whose prefill takes the fastest route: the wgmma scan on sm_90). Outputs: $OUT/r34.tgz,
# summary.txt (also printed last).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-500}
source scripts/gpu/job-lib.sh
job_init r34 "(the wgmma scan, TMA)"
G=$(job_example r34 gdn_gpu)
P=bench/gdn/run3
timeout $(left 240) $G --prefill-only --skip-bench --qualify-json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
for pass in 1 2; do
  timeout $(left 90) $G --prefill-only --skip-qualify --rev "$NINFER_REV" --peer $P/peer.jsonl \
      --peer-called $P/peer_called.jsonl --json $O/bench_$pass.jsonl > $O/bench_$pass.txt 2>&1
  echo "bench rc=$?" >> $O/bench_$pass.txt
  t "bench $pass"
done
job_compare_gdn mini
t compare
tar czf $OUT/r34.tgz -C /tmp r34-out
{
echo "===== summary"
cat $O/context.txt
grep -E "^qualify \(seed|FAIL|rc=" $O/qualify.txt | head -20
grep -hE "vs cpu|FAILED" $O/compare.txt | awk '{print substr($0, 1, 60) " ... " substr($0, length($0) - 60)}'
for pass in 1 2; do echo "-- bench $pass"; grep -E "wgmma|scan_wg|_wg_|f16_v64 |prep_qkvh|wu_f16|rc=" $O/bench_$pass.txt | grep -v "v32" | cut -c1-170; done
t done
} | tee $OUT/summary.txt
