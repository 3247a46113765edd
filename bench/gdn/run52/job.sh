#!/usr/bin/env bash
# bench/gdn run 52 (device job, carry [".gpu/r52", ".gpu/whl"]; ~6-9 min; any GPU): the
# split step with the gates in the update (Tile::gin: gdn/conv_step.cu, then gdn/update.cu
# with `gin`), the heuristics' split step from 5 lanes since this revision. fla 0.6.0 in
# the same call (job_peer_fla layer); the decode qualify (the gin tiles' checks among
# them); the decode bench twice (each split route's step and its two halves); the engine
# against the cpu backend (job_compare_gdn mini with NINFER_GDN_GATES_IN=1: the qwen3.6-mini
# at 8 lanes takes the gin split step); then the synthetic Qwen3.6-27B q4_g64 at 8 lanes, NINFER_GDN_GATES_IN 1 then 0
# (one process each; the heuristic routes, no profile). On an H200 also the
# prefill qualify and bench (run 48's missing figures). Outputs: $OUT/r52.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
source scripts/gpu/job-lib.sh
job_init r52 "(bench/gdn run 52: the split step with the gates in the update)"
G=$(job_example r52 gdn_gpu)
job_peer_fla layer
t peer
job_gdn_qualify decode
for i in 1 2; do job_gdn_bench decode $i r52; done
NINFER_GDN_GATES_IN=1 job_compare_gdn mini
t compare
i=0
for sw in 1 0; do
  i=$((i + 1))
  NINFER_GDN_GATES_IN=$sw timeout $(left 90) $B bench model --synthetic qwen3.6-27b --weights q4_g64 \
      --lanes 8 --prompt 16 --warmup 0 --decode-tokens 64 --json $O/model27b_${i}_g$sw.jsonl \
      > $O/model27b_${i}_g$sw.txt 2>&1
  echo "rc=$?" >> $O/model27b_${i}_g$sw.txt
  t "27B 8 lanes, gates in $sw"
done
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  job_gdn_qualify prefill
  job_gdn_bench prefill prefill r52 80
fi
tar czf $OUT/r52.tgz -C /tmp r52-out
{
echo "===== summary"
cat $O/context.txt
tail -3 $O/peer.txt; cat $O/peer_layer.txt
for q in decode prefill; do
  [ -f $O/qualify_$q.txt ] || continue
  echo "$q: $(grep -E '^qualify \(seed' $O/qualify_$q.txt) $(tail -1 $O/qualify_$q.txt)"; grep FAIL $O/qualify_$q.txt | head -5
  grep -h "xg" $O/qualify_$q.jsonl | python3 -c "import sys,json; r=[json.loads(l) for l in sys.stdin]; print(f'  gin checks: {sum(x[\"pass\"] for x in r)}/{len(r)} pass, worst rel L2 {max([x[\"rel_l2\"] for x in r] or [0]):.2e}')"
done
echo "-- compare: $(grep -c FAILED $O/compare.txt) FAILED"; grep -E "FAILED|lanes" $O/compare.txt | tail -6
for f in $O/model27b_*.txt; do echo "-- $(basename $f): $(grep -iE 'decode' $f | tail -2 | tr '\n' ' ')"; done
for i in 1 2 prefill; do
  [ -f $O/bench_$i.jsonl ] || continue
  echo "-- bench $i: $(grep -E '^copy' $O/bench_$i.txt)"
  job_gdn_table $O/bench_$i.jsonl
done
t done
} | tee $OUT/summary.txt
