#!/usr/bin/env bash
# bench/gdn run 48 (device job, carry [".gpu/r48", ".gpu/whl"]; ~5 min): main (5e3f61b)
# on an H200, run 44's steps: fla 0.6.0 in the same call (job_peer_fla layer: decode,
# chunk and whole layer), the GDN prefill qualify and bench, the decode qualify and the
# decode bench twice with this call's fla figures as the peer, then `ninfer compare`
# against the cpu backend (the GDN fixtures, the bf16 qwen3.6-mini at 1 and 8 lanes on
# the fast prefill route). Also run48/one-token.patch's decode A/B (through
# NINFER_TEMPLATES). On another GPU only main's decode bench and the A/B run (H200_ONLY=1:
# nothing). Outputs: $OUT/r48.tgz, summary.txt.
# Its H200 half (fla, the prefill and decode qualify and bench) is what bench/gdn run 51's
# job now runs on an H200, with fla's decode step too: run that one instead.
set -u
# Only an H200's prefill and peer figures are new: on another GPU only the patch's decode
# A/B runs (main's decode bench, the patch's decode qualify and bench; no peer).
H200=1; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || H200=0
# H200_ONLY=1: on another GPU, stop at once (the A/B has run).
[ $H200 = 0 ] && [ "${H200_ONLY:-0}" = 1 ] && { nvidia-smi -L; echo "not an H200: stopped"; exit 3; }
T0=$(date +%s); LIMIT=${LIMIT:-560}
source scripts/gpu/job-lib.sh
job_init r48 "(main on an H200)"
G=$(job_example r48 gdn_gpu)
if [ $H200 = 1 ]; then
job_peer_fla layer
t peer
timeout -k 5 $(left 120) $G --prefill-only --skip-bench --qualify-json $O/qualify_prefill.jsonl > $O/qualify_prefill.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_prefill.txt
t "qualify prefill"
timeout -k 5 $(left 80) $G --prefill-only --skip-qualify --rev "$NINFER_REV+r48" --peer $O/peer_graph.all.jsonl \
    --peer-called $O/peer_called.all.jsonl --json $O/bench_prefill.jsonl > $O/bench_prefill.txt 2>&1
echo "bench rc=$?" >> $O/bench_prefill.txt
t "bench prefill"
fi
if [ $H200 = 1 ]; then
  timeout -k 5 $(left 120) $G --decode-only --skip-bench --qualify-json $O/qualify_decode.jsonl > $O/qualify_decode.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify_decode.txt
  t "qualify decode"
fi
for i in 1 2; do
  timeout -k 5 $(left 60) $G --decode-only --skip-qualify --rev "$NINFER_REV+r48" --peer $O/peer_graph.all.jsonl \
      --peer-called $O/peer_called.all.jsonl --json $O/bench_$i.jsonl > $O/bench_$i.txt 2>&1
  echo "bench rc=$?" >> $O/bench_$i.txt
  t "bench decode $i"
done
# run48/one-token.patch (the fused step's T = 1 conv from registers) through
# NINFER_TEMPLATES: decode qualify, then the decode bench twice, after main's.
NINFER_TEMPLATES=$PWD/.gpu/r48/p/templates timeout -k 5 $(left 90) $G --decode-only --skip-bench \
    --qualify-json $O/qualify_decode_p.jsonl > $O/qualify_decode_p.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_decode_p.txt
t "qualify decode (patch)"
for i in 1 2; do
  NINFER_TEMPLATES=$PWD/.gpu/r48/p/templates timeout -k 5 $(left 60) $G --decode-only --skip-qualify \
      --rev "$NINFER_REV+one-token.patch" --peer $O/peer_graph.all.jsonl \
      --peer-called $O/peer_called.all.jsonl --json $O/bench_p$i.jsonl > $O/bench_p$i.txt 2>&1
  echo "bench rc=$?" >> $O/bench_p$i.txt
  t "bench decode $i (patch)"
done
[ $H200 = 1 ] && job_compare_gdn mini
t compare
tar czf $OUT/r48.tgz -C /tmp r48-out
{
echo "===== summary"
cat $O/context.txt
tail -3 $O/peer.txt; cat $O/peer_layer.txt
grep -hE "vs cpu|FAILED" $O/compare.txt | awk '{print substr($0, 1, 60) " ... " substr($0, length($0) - 60)}'
for q in prefill decode decode_p; do
  echo "$q: $(grep -E '^qualify \(seed' $O/qualify_$q.txt) $(tail -1 $O/qualify_$q.txt)"; grep FAIL $O/qualify_$q.txt | head -5
done
for i in prefill 1 2 p1 p2; do
  echo "-- bench $i: $(grep -E '^copy' $O/bench_$i.txt)"
  job_gdn_table $O/bench_$i.jsonl
done
t done
} | tee $OUT/summary.txt
