#!/usr/bin/env bash
# bench/gdn run 50 (device job, carry [".gpu/r48", ".gpu/whl"]; ~2 min; any GPU): fla 0.6.0
# doing the decode step's whole work (tools/peer_fla_gdn_layer.py: its layer's cached path,
# three conv updates and the recurrence with the gates in the kernel) beside its recurrence
# alone, and main's decode step (run 48's staged binary, main's src and templates) twice
# with this call's fla figures as the peer, all in one call. Outputs: $OUT/r50.tgz,
# summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-240}
source scripts/gpu/job-lib.sh
job_init r48 "(main; fla's decode layer step as a peer)"
O=/tmp/r50-out; rm -rf $O; mkdir -p $O; mv /tmp/r48-out/context.txt $O/
G=$(job_example r48 gdn_gpu)
job_peer_fla layer
t peer
for i in 1 2; do job_gdn_bench decode $i r50; done
tar czf $OUT/r50.tgz -C /tmp r50-out
{
echo "===== summary"
cat $O/context.txt
tail -3 $O/peer.txt; cat $O/peer_layer.txt
for i in 1 2; do
  echo "-- bench $i: $(grep -E '^copy' $O/bench_$i.txt)"
  job_gdn_table $O/bench_$i.jsonl
done
t done
} | tee $OUT/summary.txt
