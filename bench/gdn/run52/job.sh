#!/usr/bin/env bash
# bench/gdn run 52 (device job, carry [".gpu/r52"]; LIMIT s, default 400; any GPU): the
# lanes' GDN step with the gates in the update (Tile::gin) and the in-projection with the
# causal conv in its epilogue (Epilogue::Conv), both new in this revision and opt-in
# (NINFER_GDN_GATES_IN=1). In order of need, each step capped by what is left:
#   the linear qualify of the conv routes (`_conv_`: outputs and windows);
#   the GDN decode qualify (the gin tiles' checks among them);
#   the engine against the cpu backend, synthetic qwen3.6-mini q4_g64 at 8 lanes, with the
#   conv epilogue (NINFER_GDN_GATES_IN=1) and with the conv launch instead
#   (NINFER_GDN_CONV_EPILOGUE=0);
#   the GDN decode bench (each split route's step and its halves);
#   the synthetic Qwen3.6-27B q4_g64 at 8 lanes, gates-in (+ the conv epilogue) then the
#   default (the prep form), one process each, no profile;
#   the GDN decode bench again with the update's L2 prefetch (NINFER_GDN_PREFETCH=100,
#   run 49's patch as an opt-in: a hint, the kernels otherwise as without it).
# Outputs: $OUT/r52.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-400}
source scripts/gpu/job-lib.sh
job_init r52 "(bench/gdn run 52: the gates-in step and the conv epilogue)"
G=$(job_example r52 gdn_gpu)
timeout -k 5 $(left 90) $B qualify --filter _conv_ --json $O/qualify_conv.jsonl > $O/qualify_conv.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_conv.txt
t "qualify conv"
job_gdn_qualify decode 90
for v in "NINFER_GDN_GATES_IN=1" "NINFER_GDN_GATES_IN=1 NINFER_GDN_CONV_EPILOGUE=0"; do
  tag=$(echo $v | tr -cd 'A-Z01=' | tr '=' '-')
  env $v timeout $(left 60) $B compare --synthetic qwen3.6-mini --weights q4_g64 --lanes 8 \
      > $O/compare_$tag.txt 2>&1
  echo "rc=$?" >> $O/compare_$tag.txt
  t "compare $v"
done
job_gdn_bench decode 1 r52 50
i=0
for v in "NINFER_GDN_GATES_IN=1" "NINFER_GDN_GATES_IN=0"; do
  i=$((i + 1))
  env $v timeout $(left 80) $B bench model --synthetic qwen3.6-27b --weights q4_g64 \
      --lanes 8 --prompt 16 --warmup 0 --decode-tokens 64 --json $O/model27b_$i.jsonl \
      > $O/model27b_$i.txt 2>&1
  echo "$v rc=$?" >> $O/model27b_$i.txt
  t "27B 8 lanes, $v"
done
(export NINFER_GDN_PREFETCH=100; job_gdn_bench decode p100 r52-p100 50)
tar czf $OUT/r52.tgz -C /tmp r52-out
{
echo "===== summary"
cat $O/context.txt
echo "conv: $(grep -E 'checks|passed|FAIL' $O/qualify_conv.txt | tail -3 | tr '\n' ' ') $(tail -1 $O/qualify_conv.txt)"
echo "decode: $(grep -E '^qualify \(seed' $O/qualify_decode.txt) $(tail -1 $O/qualify_decode.txt)"; grep FAIL $O/qualify_decode.txt | head -5
grep -h "xg" $O/qualify_decode.jsonl | python3 -c "import sys,json; r=[json.loads(l) for l in sys.stdin]; print(f'  gin checks: {sum(x[\"pass\"] for x in r)}/{len(r)} pass, worst rel L2 {max([x[\"rel_l2\"] for x in r] or [0]):.2e}')"
for f in $O/compare_*.txt; do echo "-- $(basename $f): $(tail -4 $f | tr '\n' ' ')"; done
for f in $O/model27b_*.txt; do echo "-- $(basename $f): $(grep -iE 'decode|rc=' $f | tail -3 | tr '\n' ' ')"; done
[ -f $O/bench_1.jsonl ] && { echo "-- bench: $(grep -E '^copy' $O/bench_1.txt)"; job_gdn_table $O/bench_1.jsonl; }
[ -f $O/bench_p100.jsonl ] && { echo "-- bench, prefetch 100: $(grep -E '^copy' $O/bench_p100.txt)"; job_gdn_table $O/bench_p100.jsonl; }
t done
} | tee $OUT/summary.txt
