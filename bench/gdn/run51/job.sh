#!/usr/bin/env bash
# bench/gdn run 51 (device job, carry [".gpu/r51", ".gpu/whl"]; ~4-6 min; any GPU): fla
# 0.6.0 in the same call (job_peer_fla layer: its recurrence alone, its decode step doing
# the layer's whole work, its chunk and its whole prefill layer), the decode qualify (with
# the update that takes the gates and norms in: `gdn_update_in_*`), the decode bench twice
# (the split routes' halves and the update-in alone beside the step), then, on an H200
# only, the prefill qualify and bench (run 48's missing figures). Outputs: $OUT/r51.tgz,
# summary.txt. (The H100 run of 2026-12-06 ran these steps inline; they are job-lib's
# job_gdn_qualify / job_gdn_bench since, the same commands.)
set -u
T0=$(date +%s); LIMIT=${LIMIT:-560}
source scripts/gpu/job-lib.sh
job_init r51 "(bench/gdn run 51: the update with the gates and norms in; fla's decode layer)"
G=$(job_example r51 gdn_gpu)
job_peer_fla layer
t peer
job_gdn_qualify decode
for i in 1 2; do job_gdn_bench decode $i r51; done
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  job_gdn_qualify prefill
  job_gdn_bench prefill prefill r51 80
fi
tar czf $OUT/r51.tgz -C /tmp r51-out
{
echo "===== summary"
cat $O/context.txt
tail -3 $O/peer.txt; cat $O/peer_layer.txt
for q in decode prefill; do
  [ -f $O/qualify_$q.txt ] || continue
  echo "$q: $(grep -E '^qualify \(seed' $O/qualify_$q.txt) $(tail -1 $O/qualify_$q.txt)"; grep FAIL $O/qualify_$q.txt | head -5
  grep -h "update_in" $O/qualify_$q.jsonl | python3 -c "import sys,json; r=[json.loads(l) for l in sys.stdin]; print(f'  update_in checks: {sum(x[\"pass\"] for x in r)}/{len(r)} pass, worst rel L2 {max([x[\"rel_l2\"] for x in r] or [0]):.2e}')"
done
for i in 1 2 prefill; do
  [ -f $O/bench_$i.jsonl ] || continue
  echo "-- bench $i: $(grep -E '^copy' $O/bench_$i.txt)"
  job_gdn_table $O/bench_$i.jsonl
done
t done
} | tee $OUT/summary.txt
