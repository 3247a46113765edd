#!/usr/bin/env bash
# bench/gdn run 54 (device job, carry [".gpu/r54", ".gpu/whl"]; LIMIT s, default 420; meant
# for an H200): issue 5's lines where the issue sets them, with the gates-in split tiles
# now prefetching state into L2 (their default since 3f83234). In order of need, each step
# capped by what is left: the decode qualify; the decode bench (each split route's step
# and halves, the gin tiles beside the prep forms); fla 0.6.0 in the same call (its
# recurrence, its decode step doing the layer's work, its chunk and its prefill layer); the
# decode bench again with fla as the peer; the prefill qualify and bench (on any GPU since
# stop 56: an H100's prefill figures are data too).
# Outputs: $OUT/r54.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-420}
source scripts/gpu/job-lib.sh
job_init r54 "(bench/gdn run 54: issue 5's lines with the gin tiles prefetching)"
G=$(job_example r54 gdn_gpu)
job_gdn_qualify decode 40
job_gdn_bench decode 1 r54 90
job_peer_fla layer
t peer
job_gdn_bench decode 2 r54 90
job_gdn_qualify prefill 60
job_gdn_bench prefill prefill r54 80
tar czf $OUT/r54.tgz -C /tmp r54-out
{
echo "===== summary"
cat $O/context.txt
tail -3 $O/peer.txt 2>/dev/null; cat $O/peer_layer.txt 2>/dev/null
for q in decode prefill; do
  [ -f $O/qualify_$q.txt ] || continue
  echo "$q: $(grep -E '^qualify \(seed' $O/qualify_$q.txt) $(tail -1 $O/qualify_$q.txt)"; grep FAIL $O/qualify_$q.txt | head -5
done
for i in 1 2 prefill; do
  [ -f $O/bench_$i.jsonl ] || continue
  echo "-- bench $i: $(grep -E '^copy' $O/bench_$i.txt)"
  job_gdn_table $O/bench_$i.jsonl
done
t done
} | tee $OUT/summary.txt
